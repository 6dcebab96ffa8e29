-- pottery Redlock.extend, per master: a new lease while the key holds the
-- caller's uuid. KEYS[1] the key; ARGV[1] the uuid, ARGV[2] ms. 1 or 0.
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
