-- Laravel's Illuminate\Cache\RedisLock::release: delete the lock if the
-- caller owns it. KEYS[1] the lock; ARGV[1] the owner. 1 deleted, 0 not.
if redis.call('get', KEYS[1]) ~= ARGV[1] then
  return 0
end
return redis.call('del', KEYS[1])
