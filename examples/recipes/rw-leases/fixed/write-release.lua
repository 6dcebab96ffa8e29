-- Delete the lock if the writer's field still holds the caller's token.
-- KEYS[1] the lock, ARGV[1] the token. Returns 1 when deleted.
if redis.call('HGET', KEYS[1], 'w') == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
