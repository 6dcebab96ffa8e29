-- Spring Integration 6.x unlock: compare and UNLINK in one script.
-- KEYS[1] the lock; ARGV[1] the client id. true (1) when unlinked, else
-- false (nil).
if redis.call('GET', KEYS[1]) == ARGV[1] and redis.call('UNLINK', KEYS[1]) == 1 then
  return true
end
return false
