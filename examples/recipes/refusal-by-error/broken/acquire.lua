-- Take the lock, or take it again with the same token. A refusal is not a
-- reply but an error, as in libraries that turn it into an exception.
-- KEYS[1] the lock, ARGV[1] the token, ARGV[2] the lease in ms.
local owner = redis.call('GET', KEYS[1])
if owner and owner ~= ARGV[1] then
  return redis.error_reply('LOCKED: held by another owner')
end
return redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
