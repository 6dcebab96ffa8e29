-- python-redis-lock (4.x) extend: 1 not the caller's, 2 the lock has no
-- expiry, 0 renewed. KEYS[1] the lock; ARGV[1] the id, ARGV[2] the lease
-- in seconds.
if redis.call('get', KEYS[1]) ~= ARGV[1] then
  return 1
end
if redis.call('ttl', KEYS[1]) < 0 then
  return 2
end
redis.call('expire', KEYS[1], ARGV[2])
return 0
