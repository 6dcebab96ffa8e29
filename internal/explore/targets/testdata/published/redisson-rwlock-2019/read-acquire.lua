-- Redisson's RReadWriteLock, read side, before mid-2019: the same hash and
-- timeout keys, but every read hold sets the lock key's lease to its own.
-- A reader with a shorter lease than one already reading cuts the key's
-- lease short under it, and a writer gets in beside that reader.
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
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1])
