-- The write hold: refused while any reader is counted or a writer holds
-- it; the writer's key carries its token and lease.
-- KEYS[1] the writer's key, KEYS[2] the readers' counters,
-- ARGV[1] the token, ARGV[2] the lease in ms.
-- Returns 1 when taken, 0 when not.
if redis.call('EXISTS', KEYS[2]) == 1 then
  return 0
end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 1
end
return 0
