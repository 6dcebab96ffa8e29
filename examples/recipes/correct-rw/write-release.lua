-- Give back the write hold if it is still ours.
-- KEYS[1] lock key, ARGV[1] owner token.
if redis.call('HGET', KEYS[1], 'writer') == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
