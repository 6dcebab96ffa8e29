-- Give back our own read hold, and only ours: each reader has its own
-- field, so one reader's release cannot end another's hold. When the
-- last field goes, Redis deletes the key.
-- KEYS[1] lock key, ARGV[1] owner token.
return redis.call('HDEL', KEYS[1], 'r:' .. ARGV[1])
