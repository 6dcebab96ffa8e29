-- Take the lock with the token as its value and the lease in ms; the
-- token's length comes along so that a truncated argument is caught.
-- KEYS[1] the lock, ARGV[1] the lease in ms, ARGV[2] the token,
-- ARGV[3] the token's length. Replies OK when taken, nil when not.
if string.len(ARGV[2]) ~= tonumber(ARGV[3]) then
  return redis.error_reply('token truncated')
end
return redis.call('SET', KEYS[1], ARGV[2], 'NX', 'PX', ARGV[1])
