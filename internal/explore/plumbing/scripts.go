package plumbing

import (
	"github.com/redis/go-redis/v9"
)

// TickScript shortens the lease of every volatile key matching ARGV[1] by
// ARGV[2] µs (of the server's time: virtual time dilated), less the real time
// that already ran it down: since ARGV[3] (the server's time of the last
// advance, µs; -1 for none to give back), or, for the keys named in the
// ARGV[4] triples that follow it (a key, then two times, µs), since their
// write, which happened between those two times. Then come a count and as
// many keys that a transaction WATCHes, then pairs of a key and the µs it
// is owed: a watched key keeps its lease on the server (a PEXPIRE would
// make its EXEC fail, as no passing of time does), and is owed the time
// that passed instead; a key that is owed and no longer watched is paid
// (shortened by what it is owed too). It deletes the keys whose lease runs
// out, and returns the server's time (seconds, then µs, as TIME), the
// shortest lease left (ms, -1 for none), "1" when whether a lease ran out
// depends on when within its window a write happened (a window wider than
// 2 ms), else "0", the number of keys deleted, the keys deleted, then each
// watched key that is owed time, with the µs it is owed.
var TickScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local d = tonumber(ARGV[2])
local since = 0
if tonumber(ARGV[3]) >= 0 then since = now - tonumber(ARGV[3]) end
local i = 5
local win = {}
for _ = 1, tonumber(ARGV[4]) do
	win[ARGV[i]] = {now - tonumber(ARGV[i + 2]), now - tonumber(ARGV[i + 1])}
	i = i + 3
end
local watched = {}
local n = tonumber(ARGV[i])
for j = i + 1, i + n do watched[ARGV[j]] = true end
local owed = {}
for j = i + n + 1, #ARGV, 2 do owed[ARGV[j]] = tonumber(ARGV[j + 1]) end
local gone, kept, unsteady, shortest = {}, {}, '0', -1
for _, k in ipairs(redis.call('KEYS', ARGV[1])) do
	local p = redis.call('PTTL', k)
	if p > 0 then
		local lo, hi = since, since
		if win[k] then lo, hi = win[k][1], win[k][2] end
		local left = p * 1000 + (lo + hi) / 2 - d - (owed[k] or 0)
		local half = (hi - lo) / 2
		if half > 1000 and math.abs(left - 1000) <= half then
			unsteady = '1'
		end
		if left < 1000 then
			redis.call('DEL', k)
			gone[#gone + 1] = k
		else
			local ms = math.floor(left / 1000)
			if watched[k] then
				kept[#kept + 1] = k
				kept[#kept + 1] = tostring(math.floor(p * 1000 - left))
			else
				redis.call('PEXPIRE', k, ms)
			end
			if shortest < 0 or ms < shortest then shortest = ms end
		end
	end
end
local out = {t[1], t[2], tostring(shortest), unsteady, tostring(#gone)}
for _, k in ipairs(gone) do out[#out + 1] = k end
for _, v in ipairs(kept) do out[#out + 1] = v end
return out`)

// SettleScript pays the keys owed time (see TickScript). ARGV[1] says
// which: "all" every key given; "unwatched" those not watched; "check"
// none (it only forgets the keys gone). Then come a count and as many
// watched keys, then pairs of a key and the µs it is owed. A key paid has
// its lease shortened by what it is owed, as if the clock's advances had
// shortened it; a key gone or without a lease owes nothing. It returns the
// pairs still owed.
var SettleScript = redis.NewScript(`
local how = ARGV[1]
local n = tonumber(ARGV[2])
local watched = {}
for i = 3, 2 + n do watched[ARGV[i]] = true end
local kept = {}
for i = 3 + n, #ARGV, 2 do
	local k = ARGV[i]
	local p = redis.call('PTTL', k)
	if p > 0 then
		if how == 'check' or how == 'unwatched' and watched[k] then
			kept[#kept + 1] = k
			kept[#kept + 1] = ARGV[i + 1]
		else
			local left = p * 1000 - tonumber(ARGV[i + 1])
			redis.call('PEXPIRE', k, math.max(1, math.floor(left / 1000)))
		end
	end
end
return kept`)

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
