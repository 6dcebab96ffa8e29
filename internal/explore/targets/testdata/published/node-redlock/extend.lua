-- node-redlock v5 extend: only if every key still holds the value, set them
-- again with the new lease; answers how many, or 0.
-- KEYS the resources; ARGV[1] the value, ARGV[2] the lease in ms.
for _, key in ipairs(KEYS) do
  if redis.call('get', key) ~= ARGV[1] then
    return 0
  end
end
for _, key in ipairs(KEYS) do
  redis.call('set', key, ARGV[1], 'PX', ARGV[2])
end
return #KEYS
