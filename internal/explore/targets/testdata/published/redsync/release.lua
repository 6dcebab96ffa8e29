-- redsync (v4): delete the lock only while it carries the caller's value.
-- KEYS[1] the lock; ARGV[1] the value. 1 deleted, 0 someone else's,
-- -1 gone already (Go: ErrLockAlreadyExpired).
local held = redis.call('GET', KEYS[1])
if held == false then
  return -1
end
if held ~= ARGV[1] then
  return 0
end
return redis.call('DEL', KEYS[1])
