package exploresession_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/service/api"
	"github.com/lockmarket/lockmarket/internal/service/exploresession"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// A lock of one's own, as a student pastes it: the take is right, but the
// extension renews whatever key is there, someone else's too.
const (
	pastedAcquire = `if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
return 0`
	pastedRelease = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`
	pastedExtend = `return redis.call('PEXPIRE', KEYS[1], ARGV[2])`
)

// stepTo takes the first enabled action of kind for client.
func stepTo(t *testing.T, m *exploresession.Manager, id string, st api.ExploreState, kind, client string) (api.ExploreState, error) {
	t.Helper()
	for _, a := range st.Enabled {
		if a.Kind == kind && a.Client == client {
			b, _ := json.Marshal(a)
			got, err := m.Step(context.Background(), id, b)
			if err != nil {
				return st, err
			}
			return got, nil
		}
	}
	t.Fatalf("no %s of %s among %v", kind, client, st.Enabled)
	return st, nil
}

// TestLuaSessions: Lua that does not parse, or that names what a lock's
// script has no use for, is refused with a message that says where; a
// pasted lock whose extension renews anyone's lease gets a
// counterexample on its sandbox; a script written to dodge a bound (a
// loop in pcall, in a coroutine, in a chunk built at run time, a loop
// after a write, which SCRIPT KILL cannot stop, a spin inside one C
// function, a memory grab through a string's methods) is stopped with a
// message naming the bound, and its session answers a step after it.
func TestLuaSessions(t *testing.T) {
	redistest.RequireServer(t)
	ctx := context.Background()
	// Long enough for a step that runs no loop on a loaded machine.
	const budget = time.Second
	m := exploresession.New(exploresession.Config{StepBudget: budget})
	defer m.Close()
	for _, l := range []api.LuaLock{
		{Acquire: "return (", Release: pastedRelease},
		{Acquire: pastedAcquire},
		{},
		{Acquire: pastedAcquire, Release: pastedRelease, ReadAcquire: pastedAcquire},
		{Acquire: strings.Repeat("-- a comment\n", 400), Release: pastedRelease},
	} {
		_, _, err := m.Start(ctx, "c", api.ExploreRequest{Lua: &l})
		if !errors.Is(err, api.ErrInvalid) {
			t.Errorf("Start(%.30q...): %v, want ErrInvalid", l.Acquire, err)
		}
	}
	if _, _, err := m.Start(ctx, "c", api.ExploreRequest{Lua: &api.LuaLock{Acquire: "local a = 1\nlocal x = = 1", Release: "return 0"}}); err == nil ||
		!strings.Contains(err.Error(), "lua.acquire does not parse") || !strings.Contains(err.Error(), "line:2") {
		t.Errorf("a script that does not parse: %v, want its line named", err)
	}
	for _, tc := range []struct{ src, word string }{
		{"return loadfile('/etc/passwd')", "loadfile"},
		{"local x = 1\n--\nreturn dofile('/etc/passwd')", "dofile"},
		{"local m = require('os')", "require"},
		{"return io.open('/etc/passwd'):read('*a')", "io"},
		{"return os.getenv('HOME')", "os"},
		{"setfenv(1, {})", "setfenv"},
		{"local e = getfenv(0)", "getfenv"},
		{"return load('return 1')()", "load"},
		{"return loadstring('return 1')()", "loadstring"},
		{"return debug.getinfo(1)", "debug"},
		{"return package.loaded", "package"},
		{"return string.dump(function() end)", "string.dump"},
		{"return _G['load' .. 'file']", "_G"},
	} {
		_, _, err := m.Start(ctx, "c", api.ExploreRequest{Lua: &api.LuaLock{Acquire: tc.src, Release: pastedRelease}})
		if !errors.Is(err, api.ErrInvalid) || !strings.Contains(err.Error(), tc.word+" is not for a lock's script") {
			t.Errorf("%q: %v, want ErrInvalid naming %s", tc.src, err, tc.word)
		}
	}
	// A field of the same name is no global: it passes.
	if id, _, err := m.Start(ctx, "c", api.ExploreRequest{Lua: &api.LuaLock{Acquire: "local t = {}\nt.os, t.io = 1, 2\n" +
		"if t.os + t.io == 3 then return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) and 1 or 0 end return 0",
		Release: pastedRelease}}); err != nil {
		t.Errorf("a table with fields os and io: %v", err)
	} else {
		m.Remove(id)
	}

	id, _, err := m.Start(ctx, "c", api.ExploreRequest{Lua: &api.LuaLock{Acquire: pastedAcquire, Release: pastedRelease,
		Extend: pastedExtend}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Find(ctx, id, nil); err != nil {
		t.Fatal(err)
	}
	fs := waitFind(t, m, id).Find
	if c := fs.Result.Counterexample(); fs.State != api.FindFound || c == nil ||
		c.Property != result.MutualExclusion && c.Property != result.Ownership {
		t.Fatalf("the pasted lock: %+v, want mutual exclusion or ownership broken", fs)
	}
	m.Remove(id)

	// A failed allocation can take a sandbox (at nice 19) many seconds on
	// a busy machine: the memory bound ends these scripts whatever the
	// time, so their budget is only a backstop, far beyond any load.
	mem := exploresession.New(exploresession.Config{StepBudget: 3 * time.Minute})
	defer mem.Close()
	overBudget := "the step ran past its budget of " + budget.String()
	t.Run("bounds", func(t *testing.T) {
		for _, tc := range []struct {
			m             *exploresession.Manager
			acquire, want string
		}{
			{m, "while true do end", overBudget},
			{m, "local function f(n) return f(n + 1) end return f(1)", overBudget},
			{m, "local function f(n) return 1 + f(n + 1) end return f(1)", "stack overflow"},
			{m, "local ok = pcall(function() while true do end end) while true do pcall(function() while true do end end) end", overBudget},
			{m, "local co = coroutine.wrap(function() while true do end end) while true do pcall(co) end", overBudget},
			{m, "redis.call('SET', KEYS[1] .. 'x', 1) while true do end", overBudget},
			{m, "return string.find(('a'):rep(40), '(.-)(.-)(.-)(.-)(.-)(.-)(.-)(.-)(.-)b')", overBudget},
			{mem, "local t = {} for i = 1, 100 do t[i] = ('x'):rep(2^20 * i) end return 1", "64 MiB of Lua heap"},
			{mem, "local s = ('x'):rep(2^30) return 1", "64 MiB of Lua heap"},
			{mem, "local s = string.rep('x', 2^26) .. string.rep('y', 2^26) return 1", "64 MiB of Lua heap"},
			// Redis checks maxmemory as a script starts only: within one,
			// the address space bound ends the server, which starts again.
			{mem, "for i = 1, 1e6 do redis.call('SET', KEYS[1] .. i, ('x'):rep(1000)) end return 1", "was started again"},
		} {
			t.Run(tc.acquire, func(t *testing.T) {
				t.Parallel() // each on a sandbox of its own
				m := tc.m
				id, got, err := m.Start(ctx, t.Name(), api.ExploreRequest{Lua: &api.LuaLock{Acquire: tc.acquire, Release: pastedRelease}})
				if err != nil {
					t.Fatal(err)
				}
				defer m.Remove(id)
				st, err := stepTo(t, m, id, got, action.Start, "A")
				if err != nil {
					t.Fatal(err)
				}
				_, err = stepTo(t, m, id, st, action.Run, "A")
				if !errors.Is(err, api.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%v, want ErrInvalid saying %q", err, tc.want)
				}
				if _, err := stepTo(t, m, id, st, action.Start, "B"); err != nil {
					t.Errorf("a step after the stop: %v", err)
				}
			})
		}
	})
}
