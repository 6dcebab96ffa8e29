-- BROKEN on purpose: all readers share one field, "reader", and each
-- new reader overwrites it with its own token. (The write scripts are
-- the correct ones.)
-- KEYS[1] lock key, ARGV[1] owner token, ARGV[2] lease in ms.
if redis.call('HEXISTS', KEYS[1], 'writer') == 1 then
  return 0
end
redis.call('HSET', KEYS[1], 'reader', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
