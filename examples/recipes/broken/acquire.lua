-- Take the lock if nobody holds it: one SET that stores the owner's
-- token only if the key is absent (NX) and gives it a lease (PX), so the
-- check and the take cannot be separated and a crashed owner's lock
-- still runs out.
-- KEYS[1] lock key, ARGV[1] owner token, ARGV[2] lease in ms.
-- Returns 1 when taken, 0 when someone else holds the lock.
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 1
end
return 0
