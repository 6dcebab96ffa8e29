package exploresession_test

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/service/api"
	"github.com/lockmarket/lockmarket/internal/service/exploresession"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// delRelease is the textbook bug: the release deletes the lock whoever
// holds it, so an owner whose lease ran out frees the next owner's lock.
const delRelease = `redis.call('DEL', KEYS[1])
return 1`

// verdictsOf is each property's verdict of a search, by property.
func verdictsOf(fs *api.FindStatus) map[string]string {
	vs := map[string]string{}
	for _, v := range fs.Properties {
		vs[v.Property] = v.Verdict
	}
	return vs
}

// findOn starts a session of req, takes the steps (each the first
// enabled action of its kind and client), searches from there, and
// returns the search's end.
func findOn(t *testing.T, m *exploresession.Manager, req api.ExploreRequest, steps ...[2]string) (api.ExploreState, *api.FindStatus) {
	t.Helper()
	ctx := context.Background()
	id, st, err := m.Start(ctx, t.Name(), req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Remove(id) })
	for _, s := range steps {
		if st, err = stepTo(t, m, id, st, s[0], s[1]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.Find(ctx, id, nil); err != nil {
		t.Fatal(err)
	}
	fs := waitFind(t, m, id).Find
	t.Logf("%s (%s): %s after %d schedules, %.0f ms: %+v", st.Target, st.Model, fs.State, fs.Schedules, fs.ElapsedMS,
		fs.Properties)
	return st, fs
}

// TestPastedLockJudged: a pasted lock is judged as a recipe directory is,
// with three clients by default. One released by a plain DEL is found
// breaking what a lock promises, as the counterexample shows. A pasted
// copy of recipe 6's algorithm (a token in SET NX PX, a release that
// checks it) gets recipe 6's verdict: mutual exclusion and liveness hold
// in every schedule (ownership and its lease too, which only a lock given
// as scripts is judged by), and the lost update is found and shown as what
// a lease lock without fencing does not promise, not as a bug of it.
func TestPastedLockJudged(t *testing.T) {
	redistest.RequireServer(t)
	// A budget no machine's load runs out: each search is exhaustive
	// within seconds.
	m := exploresession.New(exploresession.Config{FindBudget: 10 * time.Minute, StepBudget: loadStepBudget})
	t.Cleanup(m.Close) // after the subtests

	id, st, err := m.Start(context.Background(), t.Name(), api.ExploreRequest{Clients: 2, Faults: []string{"none"},
		Lua: &api.LuaLock{Acquire: pastedAcquire, Release: pastedRelease}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(st.Model, "2 clients") || !strings.Contains(st.Model, "no fault") {
		t.Errorf("2 clients, no fault: model %q", st.Model)
	}
	m.Remove(id)

	t.Run("a DEL release", func(t *testing.T) {
		t.Parallel() // a sandbox of its own
		st, fs := findOn(t, m, api.ExploreRequest{Lua: &api.LuaLock{Acquire: pastedAcquire, Release: delRelease}})
		if !strings.HasPrefix(st.Model, "3 clients") {
			t.Errorf("model %q, want 3 clients by default", st.Model)
		}
		judged := map[string]string{}
		for _, j := range st.Judged {
			judged[j.Property] = j.Judged
		}
		if want := map[string]string{result.MutualExclusion: api.Promised, result.Liveness: api.Promised,
			result.Ownership: api.Promised, result.Lease: api.Promised, result.Resource: api.NotPromised}; !maps.Equal(judged, want) {
			t.Errorf("judged %v, want %v", judged, want)
		}
		c := fs.Result.Counterexample()
		if fs.State != api.FindFound || c == nil || fs.Unpromised != nil {
			t.Fatalf("the DEL release: %s, counterexample %v, want one found", fs.State, c)
		}
		vs := verdictsOf(fs)
		if (c.Property != result.MutualExclusion && c.Property != result.Ownership) || vs[c.Property] != api.Broken {
			t.Errorf("found %s (verdict %q), want mutual exclusion or ownership broken", c.Property, vs[c.Property])
		}
		if vs[result.Resource] != api.Open {
			t.Errorf("the resource after the lock broke: %q, want open", vs[result.Resource])
		}
	})

	t.Run("recipe 6's algorithm", func(t *testing.T) {
		t.Parallel()
		// From the same three steps (A takes the lock and reads the
		// counter), with two clients as recipe 6's lesson has: the
		// search from the start is the same question, asked of a few
		// times more schedules (docs/lab.md has its figures).
		taken := [][2]string{{action.Start, "A"}, {action.Run, "A"}, {action.Run, "A"}}
		// The two searches run side by side, each in a subtest of its
		// own, so that a failure of either ends only its goroutine's test.
		var six, own *api.FindStatus
		t.Run("searches", func(t *testing.T) {
			t.Run("recipe 6", func(t *testing.T) {
				t.Parallel()
				_, six = findOn(t, m, api.ExploreRequest{Recipe: ptr("6")}, taken...)
			})
			t.Run("pasted copy", func(t *testing.T) {
				t.Parallel()
				_, own = findOn(t, m, api.ExploreRequest{Lua: &api.LuaLock{Acquire: pastedAcquire,
					Release: pastedRelease}, Clients: 2}, taken...)
			})
		})
		if six == nil || own == nil {
			t.Fatal("a search did not end (its subtest says why)")
		}
		for _, fs := range []*api.FindStatus{six, own} {
			vs := verdictsOf(fs)
			if fs.State != api.FindNone || vs[result.MutualExclusion] != api.Holds || vs[result.Liveness] != api.Holds ||
				vs[result.Resource] != api.NotPromised {
				t.Errorf("%s, verdicts %v: want none found, mutual exclusion and liveness holding, the resource not promised",
					fs.State, vs)
			}
			if c := fs.Unpromised.Counterexample(); c == nil || c.Property != result.Resource {
				t.Errorf("the lost update not shown: %+v", fs.Unpromised)
			}
		}
		vs6, vs := verdictsOf(six), verdictsOf(own)
		if vs[result.Ownership] != api.Holds || vs[result.Lease] != api.Holds {
			t.Errorf("the pasted copy: %v, want ownership and its lease holding", vs)
		}
		for _, p := range result.Properties() {
			if vs6[p] != api.NotChecked && vs6[p] != vs[p] {
				t.Errorf("%s: recipe 6 %q, its pasted copy %q", p, vs6[p], vs[p])
			}
		}
	})
}

// TestPastedLockBounds: a pasted lock takes 2 or 3 clients and the faults
// the page offers; anything else, or bounds beside a recipe, is refused
// before a sandbox starts.
func TestPastedLockBounds(t *testing.T) {
	ctx := context.Background()
	m := exploresession.New(exploresession.Config{RedisServer: "/nonexistent/redis-server"})
	defer m.Close()
	lock := &api.LuaLock{Acquire: pastedAcquire, Release: pastedRelease}
	for _, tc := range []struct {
		req  api.ExploreRequest
		want string
	}{
		{api.ExploreRequest{Lua: lock, Clients: 4}, "clients 4: want 2 or 3"},
		{api.ExploreRequest{Lua: lock, Clients: 1}, "clients 1: want 2 or 3"},
		{api.ExploreRequest{Lua: lock, Faults: []string{"node-restart"}}, `"node-restart" is not one of`},
		{api.ExploreRequest{Lua: lock, Faults: []string{"pause-long,crash"}}, "is not one of"},
		{api.ExploreRequest{Lua: lock, Faults: []string{""}}, "is not one of"},
		{api.ExploreRequest{Recipe: ptr("6"), Clients: 3}, "clients and faults go with lua"},
		{api.ExploreRequest{Recipe: ptr("6"), Faults: []string{}}, "clients and faults go with lua"},
	} {
		_, _, err := m.Start(ctx, "c", tc.req)
		if !errors.Is(err, api.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want ErrInvalid saying %q", tc.req, err, tc.want)
		}
	}
}

// TestPastedLockBudgetSpent: a search whose budget runs out once the
// search of what the lock promises has gone through, before the one of
// what it does not has, says which was cut: the promises hold, searched
// through (each verdict "holds"); the lost update was not searched for
// through within the budget (the resource "open"). The note must not
// call the whole search partial.
func TestPastedLockBudgetSpent(t *testing.T) {
	redistest.RequireServer(t)
	m := exploresession.New(exploresession.Config{FindBudget: 10 * time.Minute, StepBudget: loadStepBudget})
	t.Cleanup(m.Close)
	ctx := context.Background()
	id, st, err := m.Start(ctx, t.Name(), api.ExploreRequest{Clients: 2, Faults: []string{"none"},
		Lua: &api.LuaLock{Acquire: pastedAcquire, Release: pastedRelease}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Remove(id) })
	for _, s := range [][2]string{{action.Start, "A"}, {action.Run, "A"}} {
		if st, err = stepTo(t, m, id, st, s[0], s[1]); err != nil {
			t.Fatal(err)
		}
	}
	fs, err := m.JudgeSpent(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %q, %+v", fs.State, fs.Note, fs.Properties)
	vs := verdictsOf(&fs)
	want := map[string]string{result.MutualExclusion: api.Holds, result.Liveness: api.Holds,
		result.Ownership: api.Holds, result.Lease: api.Holds, result.Resource: api.Open}
	if fs.State != api.FindNone || !maps.Equal(vs, want) {
		t.Fatalf("%s, verdicts %v: want none found, %v", fs.State, vs, want)
	}
	if !fs.Result.Exhaustive || fs.Unpromised != nil && fs.Unpromised.Counterexample() != nil {
		t.Fatalf("the promises' search exhaustive %v, the other's %+v: want it exhaustive, nothing else found",
			fs.Result.Exhaustive, fs.Unpromised)
	}
	for _, w := range []string{"what the lock promises holds: it was searched through",
		"what it does not promise was not searched through within the 10m0s budget"} {
		if !strings.Contains(fs.Note, w) {
			t.Errorf("note %q, want it saying %q", fs.Note, w)
		}
	}
	if strings.Contains(fs.Note, "not every continuation was covered") {
		t.Errorf("note %q: the promises were searched through", fs.Note)
	}
}
