-- A read hold counts itself in a hash of counters by reader, whose
-- lease is lengthened to cover the newest hold: once every reader's
-- lease has run out, the counters are gone too.
-- KEYS[1] the writer's key, KEYS[2] the readers' counters,
-- ARGV[1] the reader's name, ARGV[2] the lease in ms.
-- Returns 1 when taken, 0 while a writer holds the lock.
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
redis.call('HINCRBY', KEYS[2], ARGV[1], 1)
if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[2]) then
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
end
return 1
