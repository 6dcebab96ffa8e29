-- Redisson's RReadWriteLock, read unlock: drop the caller's newest read
-- hold and its timeout key; while other holds remain, the lock key's lease
-- becomes the longest lease still left among their timeout keys.
-- A lock that is gone answers 1, as Redisson does.
-- KEYS[1] the lock, KEYS[2] the channel, KEYS[3] the caller's timeout
-- prefix, KEYS[4] the prefix of every timeout key; ARGV[1] the message,
-- ARGV[2] the reader's name. nil: not a reader; 0: others still hold it;
-- 1: the lock is free.
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  redis.call('publish', KEYS[2], ARGV[1])
  return 1
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
  return nil
end
local n = redis.call('hincrby', KEYS[1], ARGV[2], -1)
if n == 0 then
  redis.call('hdel', KEYS[1], ARGV[2])
end
redis.call('del', KEYS[3] .. ':' .. (n + 1))
if redis.call('hlen', KEYS[1]) > 1 then
  local longest = -3
  for _, field in ipairs(redis.call('hkeys', KEYS[1])) do
    local holds = tonumber(redis.call('hget', KEYS[1], field))
    if type(holds) == 'number' then
      for i = holds, 1, -1 do
        local left = redis.call('pttl', KEYS[4] .. ':' .. field .. ':rwlock_timeout:' .. i)
        longest = math.max(left, longest)
      end
    end
  end
  if longest > 0 then
    redis.call('pexpire', KEYS[1], longest)
    return 0
  end
  if mode == 'write' then
    return 0
  end
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], ARGV[1])
return 1
