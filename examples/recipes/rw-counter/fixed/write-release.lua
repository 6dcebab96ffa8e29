-- Delete the writer's key if it still carries the caller's token.
-- KEYS[1] the writer's key, ARGV[1] the token. Returns 1 when deleted.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
