-- BROKEN on purpose: a read hold sets the whole key's lease to its own.
-- With every lease alike that is harmless (the newest hold ends last);
-- a reader with a shorter lease than one already reading shortens the
-- key under it, and once the key is gone a writer gets in beside it.
-- The hash has a field per reader ("r:" .. token) or one for the writer.
-- KEYS[1] the lock, ARGV[1] the token, ARGV[2] the lease in ms.
-- Replies with a table: {1, 'read'} when taken, {0, reason} when not.
if redis.call('HEXISTS', KEYS[1], 'w') == 1 then
  return {0, 'a writer holds it'}
end
redis.call('HSET', KEYS[1], 'r:' .. ARGV[1], 1)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {1, 'read'}
