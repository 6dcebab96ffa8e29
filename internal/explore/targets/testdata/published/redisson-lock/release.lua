-- Redisson's RLock, let go of one level: nil to a caller that holds
-- nothing (Java throws IllegalMonitorStateException), 0 while nested holds
-- remain (the lease renewed), 1 when the last one went (key deleted and
-- waiters told on the channel).
-- KEYS[1] the lock, KEYS[2] the channel; ARGV[1] the message,
-- ARGV[2] the lease in ms, ARGV[3] the holder's name.
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
  return nil
end
local left = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if left > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 0
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], ARGV[1])
return 1
