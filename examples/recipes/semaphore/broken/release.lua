-- Gives back the caller's permit only: 1 when it held one.
return redis.call('HDEL', KEYS[1], ARGV[1])
