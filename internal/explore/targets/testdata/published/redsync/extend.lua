-- redsync (v4) Extend: renew the lease only while the value is the caller's.
-- KEYS[1] the lock; ARGV[1] the value, ARGV[2] the lease in ms.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
return redis.call('PEXPIRE', KEYS[1], ARGV[2])
