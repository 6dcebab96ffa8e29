-- Give the lock back, but only our own: delete the key if it still holds
-- our token. An owner whose lease ran out while it was paused finds
-- someone else's token there and leaves it alone.
-- KEYS[1] lock key, ARGV[1] owner token.
-- Returns 1 when it deleted the lock, 0 when the lock was not ours.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
