-- A read hold: a field per reader ("r:" .. token) in one hash, refused
-- while the writer's field is there. The key's lease only ever grows,
-- so it lasts as long as the longest hold in it.
-- KEYS[1] the lock, ARGV[1] the token, ARGV[2] the lease in ms.
-- Replies with a table: {1, 'read'} when taken, {0, reason} when not.
if redis.call('HEXISTS', KEYS[1], 'w') == 1 then
  return {0, 'a writer holds it'}
end
redis.call('HSET', KEYS[1], 'r:' .. ARGV[1], 1)
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return {1, 'read'}
