-- python-redis-lock (4.x) release: 1 when the lock is not the caller's;
-- otherwise wake one waiter through the signal list (which itself expires
-- after ARGV[2] ms), delete the lock and answer 0.
-- KEYS[1] the lock, KEYS[2] the signal list; ARGV[1] the id,
-- ARGV[2] the signal's lease in ms.
if redis.call('get', KEYS[1]) ~= ARGV[1] then
  return 1
end
redis.call('del', KEYS[2])
redis.call('lpush', KEYS[2], 1)
redis.call('pexpire', KEYS[2], ARGV[2])
redis.call('del', KEYS[1])
return 0
