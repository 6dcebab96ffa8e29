package targets_test

import (
	"slices"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/explore/sched"
	"github.com/lockmarket/lockmarket/internal/explore/targets"
	"github.com/lockmarket/lockmarket/internal/testsupport/race"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// conventions are locks written here in the calling conventions of
// published libraries (the scripts are this project's own): the lease
// first or in seconds, a second key, the token's length, success as nil,
// "OK", 0 or a count, table replies, reentrancy by client, commands sent
// one round trip at a time. Each correct one must come out clean, and
// each one with a historical kind of bug must be found.
var conventions = []struct {
	name     string
	manifest string
	files    map[string]string
	renew    time.Duration
	broken   string // the property it must break; "" for none
}{
	{
		name: "acquire as a command, release and extend by script, success 1",
		manifest: `{"lock": "mutex", "ops": {
			"acquire": {"steps": [{"cmd": ["SET", "${lock}", "${token}", "NX", "PX", ` +
			`"${ttl}"]}], "ok": ["OK"]},
			"release": {"script": "del.lua", "keys": ["${lock}"], "args": ["${token}"], "ok": [1]},
			"extend": {"script": "touch.lua", "keys": ["${lock}"], "args": ["${token}", ` +
			`"${ttl}"], "ok": [1]}}}`,
		files: map[string]string{
			"del.lua": `if redis.call('GET', ` +
				`KEYS[1]) ~= ARGV[1] then return 0 end return redis.call('DEL', KEYS[1])`,
			"touch.lua": `if redis.call('GET', ` +
				`KEYS[1]) ~= ARGV[1] then return 0 end return redis.call('PEXPIRE', KEYS[1], ` +
				`ARGV[2])`,
		},
	},
	{
		name: "an extend by SET XX, which takes whoever's lock it finds",
		manifest: `{"lock": "mutex", "ops": {
			"acquire": {"steps": [{"cmd": ["SET", "${lock}", "${token}", "NX", "PX", ` +
			`"${ttl}"]}], "ok": ["OK"]},
			"release": {"script": "del.lua", "keys": ["${lock}"], "args": ["${token}"], "ok": [1]},
			"extend": {"steps": [{"cmd": ["SET", "${lock}", "${token}", "XX", "PX", "${ttl}"]}], ` +
			`"ok": ["OK"]}}}`,
		files: map[string]string{
			"del.lua": `if redis.call('GET', ` +
				`KEYS[1]) ~= ARGV[1] then return 0 end return redis.call('DEL', KEYS[1])`,
		},
		broken: result.MutualExclusion,
	},
	{
		name: "reentrant by client, nil on success, a channel key, renewed by a watchdog",
		manifest: `{"lock": "mutex", "reentrant": true, "ops": {
			"acquire": {"script": "lock.lua", "keys": ["${lock}"], "args": ["${ttl}", ` +
			`"${client}:7"], "ok": [null]},
			"release": {"script": "unlock.lua", "keys": ["${lock}", "lock_channel:{${lock}}"],
				"args": ["0", "${ttl}", "${client}:7"], "ok": [0, 1]},
			"extend": {"script": "renew.lua", "keys": ["${lock}"], "args": ["${ttl}", ` +
			`"${client}:7"], "ok": [1]}}}`,
		files: map[string]string{
			"lock.lua": `if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('HEXISTS', KEYS[1], ` +
				`ARGV[2]) == 1 then
  redis.call('HINCRBY', KEYS[1], ARGV[2], 1)
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  return nil
end
return redis.call('PTTL', KEYS[1])`,
			"unlock.lua": `if redis.call('HEXISTS', KEYS[1], ARGV[3]) == 0 then return nil end
if redis.call('HINCRBY', KEYS[1], ARGV[3], -1) > 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 0
end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', KEYS[2], ARGV[1])
return 1`,
			"renew.lua": `if redis.call('HEXISTS', KEYS[1], ARGV[2]) == 1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  return 1
end
return 0`,
		},
		renew: 3 * time.Second,
	},
	{
		name: "lease in seconds, a signal key outside the lock's name, success 0",
		manifest: `{"lock": "mutex", "ttl_unit": "s", "ops": {
			"acquire": {"steps": [{"cmd": ["SET", "${lock}", "${token}", "NX", "EX", ` +
			`"${ttl}"]}], "ok": ["OK"]},
			"release": {"script": "unlock.lua", "keys": ["${lock}", "signal:${lock}"], "args": ` +
			`["${token}"], "ok": [0]},
			"extend": {"script": "extend.lua", "keys": ["${lock}"], "args": ["${token}", ` +
			`"${ttl}"], "ok": [0]}}}`,
		files: map[string]string{
			"unlock.lua": `if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 1 end
redis.call('DEL', KEYS[2])
redis.call('RPUSH', KEYS[2], 1)
redis.call('PEXPIRE', KEYS[2], 1000)
redis.call('DEL', KEYS[1])
return 0`,
			"extend.lua": `if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 1 end
if redis.call('TTL', KEYS[1]) < 0 then return 2 end
redis.call('EXPIRE', KEYS[1], ARGV[2])
return 0`,
		},
	},
	{
		name: "a count of the keys taken, the token's length, a table reply",
		manifest: `{"lock": "mutex", "ops": {
			"acquire": {"script": "take.lua", "keys": ["${lock}"], "args": ["${token}", ` +
			`"${ttl}", "${token_len}"], "ok": [1]},
			"release": {"script": "give.lua", "keys": ["${lock}"], "args": ["${token}"], "ok": [1]},
			"extend": {"script": "more.lua", "keys": ["${lock}"], "args": ["${token}", ` +
			`"${ttl}"], "ok": [1]}}}`,
		files: map[string]string{
			"take.lua": `if #ARGV[1] ~= tonumber(ARGV[3]) then ` +
				`return redis.error_reply('bad token') end
for _, k in ipairs(KEYS) do if redis.call('EXISTS', k) == 1 then return {0, 'held'} end end
for _, k in ipairs(KEYS) do redis.call('SET', k, ARGV[1], 'PX', ARGV[2]) end
return {#KEYS, 'taken'}`,
			"give.lua": `local n = 0
for _, k in ipairs(KEYS) do if redis.call('GET', k) == ARGV[1] then n = n + redis.call('DEL', ` +
				`k) end end
return n`,
			"more.lua": `for _, k in ipairs(KEYS) do if redis.call('GET', ` +
				`k) ~= ARGV[1] then return 0 end end
for _, k in ipairs(KEYS) do redis.call('PEXPIRE', k, ARGV[2]) end
return #KEYS`,
		},
	},
	{
		name: "an extend that reports success when it failed",
		manifest: `{"lock": "mutex", "ops": {
			"acquire": {"steps": [{"cmd": ["SET", "${lock}", "${token}", "NX", "PX", ` +
			`"${ttl}"]}], "ok": ["OK"]},
			"release": {"script": "del.lua", "keys": ["${lock}"], "args": ["${token}"], "ok": [1]},
			"extend": {"script": "touch.lua", "keys": ["${lock}"], "args": ["${token}", ` +
			`"${ttl}"], "ok": ["OK"]}}}`,
		files: map[string]string{
			"del.lua": `if redis.call('GET', ` +
				`KEYS[1]) ~= ARGV[1] then return 0 end return redis.call('DEL', KEYS[1])`,
			"touch.lua": `if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('PEXPIRE', ` +
				`KEYS[1], ARGV[2]) end
return redis.status_reply('OK')`,
		},
		broken: result.Ownership,
	},
	{
		name: "a plain DEL release, with three clients",
		manifest: `{"lock": "mutex", "ops": {
			"acquire": {"steps": [{"cmd": ["SET", "${lock}", "${token}", "NX", "PX", ` +
			`"${ttl}"]}], "ok": ["OK"]},
			"release": {"steps": [{"cmd": ["DEL", "${lock}"]}], "ok": [1]}}}`,
		broken: result.MutualExclusion,
	},
}

func TestManifestConventions(t *testing.T) {
	redistest.SkipShort(t, redistest.NeedServer) // exhaustive searches: the full run has them
	b := redistest.Real(t)
	for _, tc := range conventions {
		t.Run(tc.name, func(t *testing.T) {
			tg, err := targets.LoadRecipe(writeRecipe(t, tc.manifest, tc.files))
			if err != nil {
				t.Fatal(err)
			}
			m := action.DefaultModel()
			m.FaultKinds = []action.Fault{action.FaultPauseLong}
			if race.Enabled && tc.broken == "" {
				// the full run without -race has the pause
				m.FaultKinds = []action.Fault{action.FaultCrash}
			}
			if tc.renew > 0 {
				// The watchdog's goroutine multiplies the orders: no
				// faults, two advances of the clock (two renewals).
				m.RenewEvery, m.FaultKinds, m.Faults, m.Ticks = tc.renew, nil, 0, 2
			}
			o := sched.Options{Workers: 2}
			if tc.broken != "" {
				o = sched.Options{Stop: []string{tc.broken}}
				if tc.broken == result.MutualExclusion {
					m.Clients = 3
					m.FaultKinds = []action.Fault{action.FaultPauseLong}
				}
			}
			res, broken := search(t, b.Client, tg, m, o)
			switch {
			case tc.broken == "" && (len(broken) > 0 || !res.Exhaustive):
				t.Errorf(
					"broken %v (exhaustive %v); want nothing broken, exhaustively", broken,
					res.Exhaustive,
				)
			case tc.broken != "" && !slices.Contains(broken, tc.broken):
				t.Errorf("broken %v; want %s", broken, tc.broken)
			}
		})
	}
}
