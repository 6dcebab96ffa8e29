-- Symfony RedisStore::delete: delete the key if it holds the caller's
-- token; the answer is not looked at. KEYS[1] the lock; ARGV[1] the token.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
