-- A fair lock: takers wait in a queue, each under its client's name, and
-- the lock goes only to the head of the queue. A taker joins the queue
-- once, and leaves it when it takes the lock.
-- KEYS[1] the lock, KEYS[2] the queue; ARGV[1] the client's name, ARGV[2]
-- the token, ARGV[3] the lease (ms). Returns 1 when taken.
if not redis.call('LPOS', KEYS[2], ARGV[1]) then
  redis.call('RPUSH', KEYS[2], ARGV[1])
end
if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('LINDEX', KEYS[2], 0) ~= ARGV[1] then
  return 0
end
redis.call('LPOP', KEYS[2])
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
