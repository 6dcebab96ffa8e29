-- bsm/redislock Obtain: set every key to the token unless one is taken; a
-- key already holding a value whose first ARGV[2] bytes are the token's may
-- be taken over (the same lock obtained again). Then give every key the lease.
-- KEYS the lock's keys; ARGV[1] the token, ARGV[2] its length, ARGV[3] the
-- lease in ms. OK when obtained, nil when not.
local pairs_ = {}
for _, key in ipairs(KEYS) do
  pairs_[#pairs_ + 1] = key
  pairs_[#pairs_ + 1] = ARGV[1]
end
if redis.call('msetnx', unpack(pairs_)) ~= 1 then
  local n = tonumber(ARGV[2])
  for _, key in ipairs(KEYS) do
    if redis.call('getrange', key, 0, n - 1) ~= string.sub(ARGV[1], 1, n) then
      return nil
    end
  end
  redis.call('mset', unpack(pairs_))
end
for _, key in ipairs(KEYS) do
  redis.call('pexpire', key, ARGV[3])
end
return redis.status_reply('OK')
