-- Delete the lock if it is the caller's, and say so: OK when deleted,
-- nil when the lock was no longer the caller's.
-- KEYS[1] the lock, ARGV[1] the token.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return redis.status_reply('OK')
end
return false
