-- Release the lock if it carries the caller's token, and leave the answer
-- in a latch named after this call, so that the same call sent again
-- answers alike (its caller deletes the latch afterwards).
-- KEYS[1] the lock, KEYS[2] the call's latch; ARGV[1] the token, ARGV[2]
-- the latch's lease (ms). Returns 1 when released, 0 otherwise.
local done = redis.call('GET', KEYS[2])
if done then
  return tonumber(done)
end
local released = 0
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  released = 1
end
redis.call('SET', KEYS[2], released, 'PX', ARGV[2])
return released
