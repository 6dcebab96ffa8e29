-- Redisson's RLock unlock of the 2.x line: a lock that is gone counts as
-- released (1) before the caller's field is looked at, so a holder whose
-- lease ran out is told it let go of a lock it no longer held.
-- KEYS[1] the lock, KEYS[2] the channel; ARGV[1] the message,
-- ARGV[2] the lease in ms, ARGV[3] the holder's name.
if redis.call('exists', KEYS[1]) == 0 then
  redis.call('publish', KEYS[2], ARGV[1])
  return 1
end
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
