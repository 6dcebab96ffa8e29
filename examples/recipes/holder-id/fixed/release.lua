-- Let go of one level of a reentrant hold, and only the caller's own; on
-- the last, delete the lock and the holder's marker, and leave an unlock
-- latch named after this call for a lease (as locks that make an id per
-- release do, for waiters to read).
-- KEYS[1] the lock, KEYS[2] the holder's marker, KEYS[3] the latch,
-- ARGV[1] the holder's id, ARGV[2] the lease in ms.
-- Returns 0 when the caller still holds it (nested), 1 when it let go,
-- nil when it held nothing.
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  return nil
end
local left = redis.call('HINCRBY', KEYS[1], ARGV[1], -1)
if left > 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
  return 0
end
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('SET', KEYS[3], ARGV[1], 'PX', ARGV[2])
return 1
