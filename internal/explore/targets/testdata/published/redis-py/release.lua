-- redis-py Lock.release: delete only the caller's own lock.
-- KEYS[1] the lock; ARGV[1] the token. 1 deleted, 0 not owned
-- (LockNotOwnedError).
local held = redis.call('get', KEYS[1])
if not held or held ~= ARGV[1] then
  return 0
end
redis.call('del', KEYS[1])
return 1
