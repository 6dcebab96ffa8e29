-- A reentrant lock: one hash, a field per holder counting how many times
-- it has taken the lock. A holder may take it again; anyone else waits.
-- KEYS[1] the lock, ARGV[1] the lease in ms, ARGV[2] the holder's name.
-- Returns nil when taken, else the lease the current holder has left.
local mine = redis.call('HEXISTS', KEYS[1], ARGV[2])
if redis.call('EXISTS', KEYS[1]) == 0 or mine == 1 then
  redis.call('HINCRBY', KEYS[1], ARGV[2], 1)
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  return nil
end
return redis.call('PTTL', KEYS[1])
