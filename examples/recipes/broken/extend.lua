-- BROKEN on purpose: renews the lease without checking whose lock it
-- is. An owner that was paused past its lease, and whose lock someone
-- else has taken since, "renews" the other owner's key, gets 1, and goes
-- on believing it holds the lock: two owners at once.
-- KEYS[1] lock key, ARGV[1] owner token (ignored: the bug), ARGV[2]
-- lease in ms. Returns 1 when the key existed.
return redis.call('PEXPIRE', KEYS[1], ARGV[2])
