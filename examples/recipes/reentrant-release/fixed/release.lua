-- Let go of one level of a reentrant hold, and only the caller's own:
-- a caller without a field in the hash holds nothing and gets nil.
-- KEYS[1] the lock, ARGV[1] the holder's name, ARGV[2] the lease in ms.
-- Returns 0 when the caller still holds it (nested), 1 when it let go,
-- nil when it held nothing.
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  return nil
end
local left = redis.call('HINCRBY', KEYS[1], ARGV[1], -1)
if left > 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 0
end
redis.call('DEL', KEYS[1])
return 1
