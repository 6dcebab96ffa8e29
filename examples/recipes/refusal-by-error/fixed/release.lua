-- Delete the lock if it carries the caller's token. Anything else, a lock
-- held by another owner or no lock at all, is refused with an error.
-- KEYS[1] the lock, ARGV[1] the token.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return redis.error_reply('NOT_OWNER: the caller does not hold the lock')
end
redis.call('DEL', KEYS[1])
return redis.status_reply('OK')
