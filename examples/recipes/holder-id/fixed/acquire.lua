-- A reentrant lock: one hash, a field per holder counting how many times
-- it has taken the lock, the holder named by its id (its token, which a
-- nested take shares). Beside it, a key named after the holder's id
-- marks who holds it, with the same lease.
-- KEYS[1] the lock, KEYS[2] the holder's marker, ARGV[1] the holder's
-- id, ARGV[2] the lease in ms.
-- Returns nil when taken, else the lease the current holder has left.
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then
  redis.call('HINCRBY', KEYS[1], ARGV[1], 1)
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('SET', KEYS[2], '1', 'PX', ARGV[2])
  return nil
end
return redis.call('PTTL', KEYS[1])
