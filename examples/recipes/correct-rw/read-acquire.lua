-- Take a read hold: refused while a writer holds the lock. The lock is a
-- hash: field "writer" holds the writer's token, field "r:<token>" each
-- reader's. The key's lease is stretched to cover the newest hold, so it
-- runs out only after every hold's lease has.
-- KEYS[1] lock key, ARGV[1] owner token, ARGV[2] lease in ms.
if redis.call('HEXISTS', KEYS[1], 'writer') == 1 then
  return 0
end
redis.call('HSET', KEYS[1], 'r:' .. ARGV[1], 1)
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 1
