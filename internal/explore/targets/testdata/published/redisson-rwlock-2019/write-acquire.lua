-- Redisson's RReadWriteLock, write side: only on a free lock, or nested
-- by the thread that already writes (its lease then added on).
-- KEYS[1] the lock; ARGV[1] the lease in ms, ARGV[2] the writer's name.
-- nil when taken, else the lease left.
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  redis.call('hset', KEYS[1], 'mode', 'write')
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  local left = redis.call('pttl', KEYS[1])
  redis.call('pexpire', KEYS[1], left + tonumber(ARGV[1]))
  return nil
end
return redis.call('pttl', KEYS[1])
