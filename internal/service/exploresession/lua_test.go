package exploresession_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/lockmarket/lockmarket/explore"
	"github.com/lockmarket/lockmarket/internal/service/api"
	"github.com/lockmarket/lockmarket/internal/service/exploresession"
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

// TestLuaSessions: Lua that does not parse is refused with the parser's
// message; a pasted lock whose extension renews anyone's lease gets a
// counterexample; a script that loops forever, or that makes a huge
// string, is stopped by its bound with a message that says so, and its
// session goes on answering.
func TestLuaSessions(t *testing.T) {
	ctx := context.Background()
	m := exploresession.New(exploresession.Config{})
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

	id, _, err := m.Start(ctx, "c", api.ExploreRequest{Lua: &api.LuaLock{Acquire: pastedAcquire, Release: pastedRelease,
		Extend: pastedExtend}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Find(ctx, id, nil); err != nil {
		t.Fatal(err)
	}
	fs := waitFind(t, m, id).Find
	if fs.State != api.FindFound || fs.Result.Counterexample() == nil ||
		fs.Result.Counterexample().Property != explore.MutualExclusion {
		t.Fatalf("the pasted lock: %+v, want mutual exclusion broken", fs)
	}

	for _, tc := range []struct{ acquire, want string }{
		{"while true do end", "after 10000 loop turns and function calls in acquire"},
		{"local function f(n) return f(n + 1) end return f(1)", "after 10000 loop turns"},
		{"::again:: goto again", "after 10000 loop turns"},
		{"return #string.rep('x', 1e9)", "string.rep of more than"},
		{"local ok = pcall(function() while true do end end) while true do end", "after 10000 loop turns"},
	} {
		id, got, err := m.Start(ctx, "c", api.ExploreRequest{Lua: &api.LuaLock{Acquire: tc.acquire, Release: pastedRelease}})
		if err != nil {
			t.Fatalf("%q: %v", tc.acquire, err)
		}
		st, err := stepTo(t, m, id, got, explore.Start, "A")
		if err != nil {
			t.Fatal(err)
		}
		_, err = stepTo(t, m, id, st, explore.Run, "A")
		if !errors.Is(err, api.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want ErrInvalid saying %q", tc.acquire, err, tc.want)
		}
		if _, err := m.State(ctx, id); err != nil {
			t.Errorf("%q: the session after the stop: %v", tc.acquire, err)
		}
		m.Remove(id)
	}
}
