-- Renew our lease: reset the key's expiry to ARGV[2] ms, only if it
-- still holds our token.
-- KEYS[1] lock key, ARGV[1] owner token, ARGV[2] lease in ms.
-- Returns 1 when renewed, 0 when the lock is no longer ours.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
