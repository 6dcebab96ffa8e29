-- A semaphore whose leases are timestamps on the client's clock, as
-- expirable semaphores keep them: KEYS[1] counts the free permits,
-- KEYS[2] holds each permit taken, scored by the time its lease ends;
-- neither key expires. ARGV: the permit's id, the client's time (ms),
-- the lease (ms), the number of permits.
local now = tonumber(ARGV[2])
redis.call('SET', KEYS[1], ARGV[4], 'NX')
-- Permits whose lease has run out come back first.
local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)
if #expired > 0 then
  redis.call('ZREM', KEYS[2], unpack(expired))
  redis.call('INCRBY', KEYS[1], #expired)
end
if tonumber(redis.call('GET', KEYS[1])) < 1 then
  return 0
end
redis.call('DECR', KEYS[1])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[1])
return 1
