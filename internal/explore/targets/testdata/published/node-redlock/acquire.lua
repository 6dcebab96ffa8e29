-- node-redlock v5 acquire: refuse (0) if any key exists, else set each to
-- the value with the lease and answer how many were set.
-- KEYS the resources; ARGV[1] the value, ARGV[2] the lease in ms.
for _, key in ipairs(KEYS) do
  if redis.call('exists', key) == 1 then
    return 0
  end
end
for _, key in ipairs(KEYS) do
  redis.call('set', key, ARGV[1], 'PX', ARGV[2])
end
return #KEYS
