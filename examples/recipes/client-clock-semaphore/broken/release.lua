-- Gives the caller's permit back: 1 when it still had it.
if redis.call('ZREM', KEYS[2], ARGV[1]) == 1 then
  redis.call('INCR', KEYS[1])
  return 1
end
return 0
