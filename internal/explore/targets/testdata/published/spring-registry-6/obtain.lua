-- Spring Integration's RedisLockRegistry obtain: the value is the registry's
-- client id, the same for every lock it takes. The same client takes it
-- again (a new lease); a free lock is set with the lease.
-- KEYS[1] the lock; ARGV[1] the client id, ARGV[2] the lease in ms.
-- true (1) when obtained, false (nil) when another client holds it.
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return true
end
if not holder then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return true
end
return false
