-- Symfony RedisStore::save: the caller's own key gets a new lease (a save
-- again), a free key is set with the lease, anything else is refused.
-- KEYS[1] the lock; ARGV[1] the token, ARGV[2] the lease in ms. 1 or 0.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 1
end
return 0
