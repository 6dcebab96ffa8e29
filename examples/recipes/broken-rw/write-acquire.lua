-- Take the write hold: only when nobody holds the lock at all (no
-- reader, no writer), with the lease on the whole key.
-- KEYS[1] lock key, ARGV[1] owner token, ARGV[2] lease in ms.
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
redis.call('HSET', KEYS[1], 'writer', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
