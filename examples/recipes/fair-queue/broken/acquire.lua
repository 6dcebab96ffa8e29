-- A fair lock: KEYS[1] holds the holder's token with a lease; KEYS[2] is
-- the queue of the clients waiting, in the order they came. A client
-- takes the lock only when it is free and the client is first in the
-- queue (or nobody waits). ARGV: the token, the lease (ms), the client.
-- A client that stops waiting stays in the queue, for good: whoever
-- queued behind it waits forever.
local head = redis.call('LINDEX', KEYS[2], 0)
if redis.call('EXISTS', KEYS[1]) == 0 and (not head or head == ARGV[3]) then
  if head then
    redis.call('LPOP', KEYS[2])
  end
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
if not redis.call('LPOS', KEYS[2], ARGV[3]) then
  redis.call('RPUSH', KEYS[2], ARGV[3])
end
return 0
