-- A semaphore whose leases are timestamps on the client's clock: KEYS[1]
-- counts the free permits, KEYS[2] holds each permit taken, scored by the
-- time its lease ends; neither key expires. ARGV: the permit's id, the
-- client's time (ms), the lease (ms), the number of permits. The lease is
-- written but never read: a permit whose holder never gives it back (it
-- crashed) never comes back.
local now = tonumber(ARGV[2])
redis.call('SET', KEYS[1], ARGV[4], 'NX')
if tonumber(redis.call('GET', KEYS[1])) < 1 then
  return 0
end
redis.call('DECR', KEYS[1])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[1])
return 1
