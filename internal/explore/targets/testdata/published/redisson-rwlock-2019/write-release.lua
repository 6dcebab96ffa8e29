-- Redisson's RReadWriteLock, write unlock. A lock that is gone answers 1.
-- KEYS[1] the lock, KEYS[2] the channel; ARGV[1] the message, ARGV[2] the
-- lease in ms, ARGV[3] the writer's name. nil: not the writer; 0: nested
-- holds remain; 1: let go.
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  redis.call('publish', KEYS[2], ARGV[1])
  return 1
end
if mode ~= 'write' or redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
  return nil
end
local n = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if n > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 0
end
redis.call('hdel', KEYS[1], ARGV[3])
if redis.call('hlen', KEYS[1]) == 1 then
  redis.call('del', KEYS[1])
  redis.call('publish', KEYS[2], ARGV[1])
else
  redis.call('hset', KEYS[1], 'mode', 'read')
end
return 1
