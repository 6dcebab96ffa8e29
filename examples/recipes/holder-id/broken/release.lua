-- BROKEN on purpose: the count is decremented without asking whether the
-- caller holds the lock at all. A holder whose lease ran out, and whose
-- lock someone else has taken since, drives a field of its own to -1 and
-- deletes the other holder's lock. On the last level it leaves an unlock
-- latch named after this call, as the fixed one does.
-- KEYS[1] the lock, KEYS[2] the holder's marker, KEYS[3] the latch,
-- ARGV[1] the holder's id, ARGV[2] the lease in ms.
-- Returns 0 when the caller still holds it (nested), 1 when it let go.
local left = redis.call('HINCRBY', KEYS[1], ARGV[1], -1)
if left > 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
  return 0
end
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('SET', KEYS[3], ARGV[1], 'PX', ARGV[2])
return 1
