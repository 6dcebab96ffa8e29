-- Symfony RedisStore::putOffExpiration: a new lease while the key holds
-- the caller's token. KEYS[1] the lock; ARGV[1] the token, ARGV[2] ms.
-- 1 renewed; 0 LockConflictedException.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
return redis.call('PEXPIRE', KEYS[1], ARGV[2])
