-- bsm/redislock Release: delete the key if it still holds the token.
-- KEYS[1] the lock; ARGV[1] the token. 1 deleted, 0 not held (ErrLockNotHeld).
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
