-- bsm/redislock Refresh: a new lease if the key still holds the token.
-- KEYS[1] the lock; ARGV[1] the token, ARGV[2] the lease in ms. 1 renewed, 0 not.
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
