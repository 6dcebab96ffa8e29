-- BROKEN on purpose: a read hold counts itself in a second key, a hash
-- of counters by reader, which is never given an expiry. A reader that
-- crashes holding it leaves its count behind for good, and no writer
-- ever gets the lock again.
-- KEYS[1] the writer's key, KEYS[2] the readers' counters,
-- ARGV[1] the reader's name, ARGV[2] the lease in ms (unused: the bug).
-- Returns 1 when taken, 0 while a writer holds the lock.
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
redis.call('HINCRBY', KEYS[2], ARGV[1], 1)
return 1
