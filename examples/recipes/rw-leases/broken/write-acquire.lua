-- The write hold: only on an empty lock (no reader, no writer).
-- KEYS[1] the lock, ARGV[1] the token, ARGV[2] the lease in ms.
-- Replies with a table: {1, 'write'} when taken, {0, reason} when not.
if redis.call('EXISTS', KEYS[1]) == 1 then
  return {0, 'held'}
end
redis.call('HSET', KEYS[1], 'w', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {1, 'write'}
