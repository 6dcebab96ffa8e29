-- node-redlock v5 release: delete each key that still holds the value and
-- answer how many were deleted. KEYS the resources; ARGV[1] the value.
local n = 0
for _, key in ipairs(KEYS) do
  if redis.call('get', key) == ARGV[1] then
    redis.call('del', key)
    n = n + 1
  end
end
return n
