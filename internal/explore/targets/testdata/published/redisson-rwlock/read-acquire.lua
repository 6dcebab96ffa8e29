-- Redisson's RReadWriteLock, read side, as it is today: one hash for the lock
-- ("mode" read or write, a count per holder), and per nested read hold a
-- timeout key of its own carrying that hold's lease. The lock key's lease
-- is never shortened by a reader: it becomes the longer of what is left
-- and the new reader's lease.
-- KEYS[1] the lock, KEYS[2] this reader's timeout prefix;
-- ARGV[1] the lease in ms, ARGV[2] the reader's name, ARGV[3] the name
-- the same thread has as a writer. nil when taken, else the lease left.
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  redis.call('hset', KEYS[1], 'mode', 'read')
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('set', KEYS[2] .. ':1', 1)
  redis.call('pexpire', KEYS[2] .. ':1', ARGV[1])
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if mode == 'read' or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then
  local n = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  local timeout = KEYS[2] .. ':' .. n
  redis.call('set', timeout, 1)
  redis.call('pexpire', timeout, ARGV[1])
  local left = redis.call('pttl', KEYS[1])
  redis.call('pexpire', KEYS[1], math.max(left, tonumber(ARGV[1])))
  return nil
end
return redis.call('pttl', KEYS[1])
