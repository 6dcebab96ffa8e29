-- pottery Redlock.release, per master: delete the key if it still holds
-- the caller's uuid. KEYS[1] the key; ARGV[1] the uuid. 1 deleted, 0 not.
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
