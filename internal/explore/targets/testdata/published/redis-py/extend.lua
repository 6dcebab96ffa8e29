-- redis-py Lock.extend: only the owner of a lock that has a lease may
-- extend it; ARGV[3] "0" adds ARGV[2] ms to what is left, "1" replaces it.
-- KEYS[1] the lock; ARGV[1] the token, ARGV[2] ms, ARGV[3] replace.
-- 1 extended, 0 not owned.
local held = redis.call('get', KEYS[1])
if not held or held ~= ARGV[1] then
  return 0
end
local left = redis.call('pttl', KEYS[1])
if not left or left < 0 then
  return 0
end
local lease = tonumber(ARGV[2])
if ARGV[3] == '0' then
  lease = lease + left
end
redis.call('pexpire', KEYS[1], lease)
return 1
