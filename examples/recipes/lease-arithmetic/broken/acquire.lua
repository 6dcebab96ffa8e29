-- A lock whose holders are the members of a sorted set, each scored with
-- the end of its lease on the client's clock: entries whose end has come
-- are dropped, and the lock is free when none is left. The key's own
-- expiry follows the newest lease, so that nothing outlives it.
-- KEYS[1] the set; ARGV[1] the client's time (ms), ARGV[2] the lease's end
-- (ms), ARGV[3] the token, ARGV[4] the lease (ms). Returns 1 when taken.
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) > 0 then
  return 0
end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
