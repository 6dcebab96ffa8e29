-- Delete the lock only while it still carries the caller's token: the
-- read and the delete happen inside one script, so no other client's
-- command can come between them.
-- KEYS[1] the lock, ARGV[1] the caller's token. Returns 1 when deleted.
local holder = redis.call('GET', KEYS[1])
if holder ~= ARGV[1] then
  return 0
end
return redis.call('DEL', KEYS[1])
