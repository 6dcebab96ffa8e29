-- BROKEN on purpose: the last reader to arrive owns the shared field, so
-- its release deletes it while an earlier reader is still reading, and
-- a writer is let in beside that reader.
-- KEYS[1] lock key, ARGV[1] owner token.
if redis.call('HGET', KEYS[1], 'reader') == ARGV[1] then
  return redis.call('HDEL', KEYS[1], 'reader')
end
return 0
