-- Count the caller's read hold down; its counter goes at zero, and the
-- hash with its last counter.
-- KEYS[1] the readers' counters, ARGV[1] the reader's name.
-- Returns 1 when the caller was counted, 0 when it was not.
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  return 0
end
if redis.call('HINCRBY', KEYS[1], ARGV[1], -1) <= 0 then
  redis.call('HDEL', KEYS[1], ARGV[1])
end
return 1
