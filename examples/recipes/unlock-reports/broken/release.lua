-- BROKEN on purpose: the lock is deleted only if it is the caller's, as
-- it should be, but the reply is OK either way, so a holder whose lease
-- ran out is told it released a lock it had already lost.
-- KEYS[1] the lock, ARGV[1] the token.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
end
return redis.status_reply('OK')
