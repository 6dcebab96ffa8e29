-- Remove the caller's own read field; the key goes with its last field.
-- KEYS[1] the lock, ARGV[1] the token. Returns 1 when it was there.
return redis.call('HDEL', KEYS[1], 'r:' .. ARGV[1])
