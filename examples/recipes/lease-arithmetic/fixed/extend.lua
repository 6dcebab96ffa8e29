-- Move the end of the caller's lease, only while its entry is there and
-- its end has not come.
-- KEYS[1] the set; ARGV[1] the client's time (ms), ARGV[2] the new end
-- (ms), ARGV[3] the token, ARGV[4] the lease (ms). Returns 1 when renewed.
local ends = redis.call('ZSCORE', KEYS[1], ARGV[3])
if not ends or tonumber(ends) <= tonumber(ARGV[1]) then
  return 0
end
redis.call('ZADD', KEYS[1], 'XX', ARGV[2], ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
