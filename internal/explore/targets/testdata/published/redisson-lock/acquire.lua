-- Redisson's RLock, take: a hash keyed by the lock, one field per holder
-- (its client id and thread) counting its nested holds.
-- KEYS[1] the lock; ARGV[1] the lease in ms; ARGV[2] the holder's name.
-- nil when taken (first or nested), else the lease left to the holder.
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1])
