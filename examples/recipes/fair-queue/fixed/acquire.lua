-- A fair lock: KEYS[1] holds the holder's token with a lease; KEYS[2] is
-- the queue of the clients waiting, in the order they came; KEYS[3] gives
-- each waiter the time, on the client's clock, until which it is taken to
-- wait (one lease after its last try). A client takes the lock only when
-- it is free and the client is first in the queue (or nobody waits).
-- ARGV: the token, the lease (ms), the client, the client's time (ms).
local now = tonumber(ARGV[4])
-- Waiters that have not tried for a lease have stopped waiting.
local gone = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)
for _, c in ipairs(gone) do
  redis.call('LREM', KEYS[2], 0, c)
  redis.call('ZREM', KEYS[3], c)
end
local head = redis.call('LINDEX', KEYS[2], 0)
if redis.call('EXISTS', KEYS[1]) == 0 and (not head or head == ARGV[3]) then
  if head then
    redis.call('LPOP', KEYS[2])
    redis.call('ZREM', KEYS[3], ARGV[3])
  end
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
if not redis.call('LPOS', KEYS[2], ARGV[3]) then
  redis.call('RPUSH', KEYS[2], ARGV[3])
end
redis.call('ZADD', KEYS[3], now + tonumber(ARGV[2]), ARGV[3])
return 0
