-- Redisson's watchdog renewal: lengthen the lease only while the caller
-- still has a field in the hash. KEYS[1] the lock; ARGV[1] the lease in
-- ms, ARGV[2] the holder's name. 1 when renewed, 0 when not held.
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('pexpire', KEYS[1], ARGV[1])
  return 1
end
return 0
