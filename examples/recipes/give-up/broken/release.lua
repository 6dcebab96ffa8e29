-- Delete the lock only while it carries the caller's token.
-- KEYS[1] the lock, ARGV[1] the token. Returns 1 when deleted.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
return redis.call('DEL', KEYS[1])
