package plumbing

import (
	"github.com/redis/go-redis/v9"
)

// TickScript shortens the lease of every volatile key matching ARGV[1] by
// ARGV[2] µs (of the server's time: virtual time dilated), less the real time
// that already ran it down: since ARGV[3] (the server's time of the last
// advance, µs; -1 for none to give back), or for the keys named in the triples
// ARGV[4], ARGV[5], ARGV[6], ... since their write, which happened between the
// two times given there (µs). It deletes the keys whose lease runs out, and
// returns the server's time (seconds, then µs, as TIME), the shortest lease
// left (ms, -1 for none), "1" when whether a lease ran out depends on when
// within its window a write happened (a window wider than 2 ms), else "0",
// then the keys deleted.
var TickScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local d = tonumber(ARGV[2])
local since = 0
if tonumber(ARGV[3]) >= 0 then since = now - tonumber(ARGV[3]) end
local win = {}
for i = 4, #ARGV, 3 do
	win[ARGV[i]] = {now - tonumber(ARGV[i + 2]), now - tonumber(ARGV[i + 1])}
end
local gone, unsteady, shortest = {}, '0', -1
for _, k in ipairs(redis.call('KEYS', ARGV[1])) do
	local p = redis.call('PTTL', k)
	if p > 0 then
		local lo, hi = since, since
		if win[k] then lo, hi = win[k][1], win[k][2] end
		local left = p * 1000 + (lo + hi) / 2 - d
		local half = (hi - lo) / 2
		if half > 1000 and math.abs(left - 1000) <= half then
			unsteady = '1'
		end
		if left < 1000 then
			redis.call('DEL', k)
			gone[#gone + 1] = k
		else
			local ms = math.floor(left / 1000)
			redis.call('PEXPIRE', k, ms)
			if shortest < 0 or ms < shortest then shortest = ms end
		end
	end
end
local out = {t[1], t[2], tostring(shortest), unsteady}
for _, k in ipairs(gone) do out[#out + 1] = k end
return out`)

// ResetScript deletes every key matching ARGV[1], then restores the keys
// given after it, each as three arguments: its name, its time to live
// (ms, 0 for none) and its value as DUMP gave it (SnapshotScript); it
// returns the server's time (µs).
var ResetScript = redis.NewScript(`
for _, k in ipairs(redis.call('KEYS', ARGV[1])) do redis.call('DEL', k) end
for i = 2, #ARGV, 3 do redis.call('RESTORE', ARGV[i], ARGV[i + 1], ARGV[i + 2]) end
local t = redis.call('TIME')
return tonumber(t[1]) * 1000000 + tonumber(t[2])`)

// SnapshotScript returns every key matching ARGV[1] as ResetScript takes
// it back: its name, its time to live (ms, 0 for none) and its DUMP.
var SnapshotScript = redis.NewScript(`
local out = {}
for _, k in ipairs(redis.call('KEYS', ARGV[1])) do
	local ttl = redis.call('PTTL', k)
	if ttl < 0 then ttl = 0 end
	out[#out + 1] = k
	out[#out + 1] = tostring(ttl)
	out[#out + 1] = redis.call('DUMP', k)
end
return out`)
