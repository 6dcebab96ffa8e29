package exploresession_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/service/api"
	"github.com/lockmarket/lockmarket/internal/service/exploresession"
)

func ptr(v string) *string { return &v }

// loadStepBudget bounds a step of pasted Lua in the tests whose scripts
// end in milliseconds: a bound no machine's load runs out, where the
// default (DefaultStepBudget) was run out by a search's step at a load
// of 37 on 2 cores. The tests of the bound itself keep their own.
const loadStepBudget = time.Minute

// waitFind reads session id until its search has ended, and returns the
// last state. It sets no deadline of its own: the search's budget (the
// Manager's FindBudget) ends the search, and go test's -timeout ends a
// test that waits longer.
func waitFind(t *testing.T, m *exploresession.Manager, id string) api.ExploreState {
	t.Helper()
	for {
		got, err := m.State(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		st := got
		if st.Find == nil {
			t.Fatal("no find in the state")
		}
		if st.Find.State != api.StateRunning {
			return st
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestStrategySessions: a session of the market's fine lock without
// fencing finds the listing sold twice; a bad strategy is refused.
func TestStrategySessions(t *testing.T) {
	ctx := context.Background()
	// A budget no machine's load runs out: the search is exhaustive
	// within minutes, and finds the double sale well before.
	m := exploresession.New(exploresession.Config{FindBudget: 10 * time.Minute})
	defer m.Close()
	for _, req := range []api.ExploreRequest{
		{Strategy: ptr("nope")},
		{Strategy: ptr("fine"), Fixed: true},
	} {
		if _, _, err := m.Start(ctx, "c", req); !errors.Is(err, api.ErrInvalid) {
			t.Errorf("Start(%q, fixed %v): %v, want ErrInvalid", *req.Strategy, req.Fixed, err)
		}
	}
	id, st, err := m.Start(ctx, "c", api.ExploreRequest{Strategy: ptr("fine")})
	if err != nil {
		t.Fatal(err)
	}
	state := st
	if state.Target != "strategy fine" || len(state.Clients) != 3 || len(state.Enabled) == 0 ||
		!strings.Contains(state.Resource, "listed [sword at 10]") {
		t.Fatalf("at the start: %+v", state)
	}
	if _, err := m.Find(ctx, id, nil); err != nil {
		t.Fatal(err)
	}
	fs := waitFind(t, m, id).Find
	if fs.State != api.FindFound || fs.Result == nil || fs.Result.Counterexample().Property != result.Resource ||
		!strings.Contains(fs.Result.Counterexample().Message, "sold twice") {
		t.Fatalf("find: %+v, want the sword sold twice", fs)
	}
	t.Logf("found after %d schedules, %.0f ms: %s", fs.Result.Schedules, fs.ElapsedMS, fs.Result.Counterexample().Message)
}

// TestFindJob: a search runs in the background; the state is read while
// it runs; a session runs one at a time and takes no step meanwhile; it
// is cancelled; a session is removed while one runs; a search from an
// earlier step of the history searches from there.
func TestFindJob(t *testing.T) {
	ctx := context.Background()
	// One CPU for searches: the second session's search waits for it.
	m := exploresession.New(exploresession.Config{Searches: 1})
	defer m.Close()
	id, st, err := m.Start(ctx, "c", api.ExploreRequest{Recipe: ptr("6"), Fixed: true})
	if err != nil {
		t.Fatal(err)
	}
	// The fixed recipe 6 from its start: a long search.
	if _, err := m.Find(ctx, id, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Find(ctx, id, nil); !errors.Is(err, api.ErrBusy) {
		t.Errorf("a second search on one session: %v, want ErrBusy", err)
	}
	a, _ := json.Marshal(st.Enabled[0])
	if _, err := m.Step(ctx, id, a); !errors.Is(err, api.ErrBusy) {
		t.Errorf("a step while the search runs: %v, want ErrBusy", err)
	}
	got, err := m.State(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if fs := got.Find; fs == nil || fs.State != api.StateRunning || fs.BudgetMS <= 0 {
		t.Fatalf("the state while searching: find %+v", fs)
	}

	// Another session's search waits for the one CPU; removing its
	// session while it waits ends it.
	id2, _, err := m.Start(ctx, "c", api.ExploreRequest{Recipe: ptr("1")})
	if err != nil {
		t.Fatal(err)
	}
	got, err = m.Find(ctx, id2, []byte(`{"from_step":0}`))
	if err != nil {
		t.Fatal(err)
	}
	if fs := got.Find; !fs.Waiting {
		t.Errorf("the second search, one CPU busy: %+v, want waiting", fs)
	}
	if err := m.Remove(id2); err != nil {
		t.Fatal(err)
	}

	got, err = m.CancelFind(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if fs := got.Find; fs.State != api.StateCancelled && fs.State != api.FindNone {
		t.Fatalf("after cancel: %+v", fs)
	}
	if _, err := m.Step(ctx, id, a); err != nil {
		t.Fatalf("a step after the search: %v", err)
	}

	// Recipe 1 stepped to step 3, scrubbed back to step 2: a search from
	// step 2 plays its continuation from there.
	id3, st3, err := m.Start(ctx, "c", api.ExploreRequest{Recipe: ptr("1")})
	if err != nil {
		t.Fatal(err)
	}
	s3 := st3
	for range 3 {
		a, _ := json.Marshal(s3.Enabled[0])
		got, err := m.Step(ctx, id3, a)
		if err != nil {
			t.Fatal(err)
		}
		s3 = got
	}
	if len(s3.Frames) != 4 || len(s3.Steps) != 3 {
		t.Fatalf("after 3 steps: %d frames, %d steps", len(s3.Frames), len(s3.Steps))
	}
	if _, err := m.Find(ctx, id3, []byte(`{"from_step":2}`)); err != nil {
		t.Fatal(err)
	}
	fs := waitFind(t, m, id3).Find
	if fs.State != api.FindFound || fs.FromStep != 2 || len(fs.Result.Counterexample().Actions) <= fs.FromStep {
		t.Fatalf("search from step 2: %+v", fs)
	}
	// Its first action branches off step 2, discarding step 3.
	b, _ := json.Marshal(fs.Result.Counterexample().Actions[fs.FromStep])
	body := strings.TrimSuffix(string(b), "}") + `,"from_step":2}`
	got, err = m.Step(ctx, id3, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if s := got; len(s.Steps) != 3 || len(s.Frames) != 4 || s.Find != nil {
		t.Fatalf("after branching from step 2: %d steps, %d frames, find %+v", len(s.Steps), len(s.Frames), s.Find)
	}
	if _, err := m.Find(ctx, id3, []byte(`{"from_step":9}`)); !errors.Is(err, api.ErrInvalid) {
		t.Errorf("from_step beyond the history: %v", err)
	}
	// A search removed with its session.
	if _, err := m.Find(ctx, id, nil); err != nil {
		t.Fatal(err)
	}
	if err := m.Remove(id); err != nil {
		t.Fatal(err)
	}
	if _, err := m.State(ctx, id); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("state after remove: %v", err)
	}
}

// TestSharedSearches: sessions that ask for the same search follow one,
// whose budget grows with the addresses they come from (not with more
// sessions from one address); the others wait in a queue, each told
// its place and an estimate; one session letting go leaves the search
// to the others, the last one ends it; an answer is kept for the next
// session that asks, within the bound.
func TestSharedSearches(t *testing.T) {
	ctx := context.Background()
	m := exploresession.New(exploresession.Config{Searches: 1, FindBudget: time.Minute,
		MaxFindBudget: 90 * time.Second, KeptSearches: 1})
	defer m.Close()
	client := "c"
	start := func(recipe string, fixed bool) string {
		t.Helper()
		id, _, err := m.Start(ctx, client, api.ExploreRequest{Recipe: ptr(recipe), Fixed: fixed})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	find := func(id string) *api.FindStatus {
		t.Helper()
		st, err := m.Find(ctx, id, nil)
		if err != nil {
			t.Fatal(err)
		}
		return st.Find
	}
	// The fixed recipe 6 from its start, asked for by two sessions of one
	// address (the second naming step 0): one search, on the one CPU,
	// with one address's budget.
	a, b := start("6", true), start("6", true)
	find(a)
	if _, err := m.Find(ctx, b, []byte(`{"from_step":0}`)); err != nil {
		t.Fatal(err)
	}
	st, err := m.State(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if fs := st.Find; fs.State != api.StateRunning || fs.Following != 2 || fs.BudgetMS != 60_000 {
		t.Fatalf("the search two sessions of one address follow: %+v, want running, following 2, budget 60 s", fs)
	}
	// A session of another address adds its budget: min(2 x 60 s, 90 s).
	client = "c2"
	e := start("6", true)
	find(e)
	client = "c"
	if st, _ := m.State(ctx, a); st.Find.Following != 3 || st.Find.BudgetMS != 90_000 {
		t.Fatalf("the search three sessions of two addresses follow: %+v, want budget 90 s", st.Find)
	}
	if _, err := m.CancelFind(ctx, e); err != nil {
		t.Fatal(err)
	}
	// Two other searches wait, in the order asked.
	c, d := start("1", false), start("2", false)
	fc, fd := find(c), find(d)
	if !fc.Waiting || fc.QueuePosition != 1 || !fd.Waiting || fd.QueuePosition != 2 ||
		fc.WaitEstimateMS <= 0 || fd.WaitEstimateMS < fc.WaitEstimateMS {
		t.Fatalf("the waiting searches: %+v and %+v, want places 1 and 2 with estimates", fc, fd)
	}
	// a lets go: b still follows the search; b lets go: it ends and the
	// queue moves.
	got, err := m.CancelFind(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if got.Find.State != api.StateCancelled {
		t.Errorf("a after letting go: %+v, want cancelled", got.Find)
	}
	if st, _ := m.State(ctx, b); st.Find.State != api.StateRunning || st.Find.Following != 1 {
		t.Errorf("b after a let go: %+v, want running, following 1", st.Find)
	}
	if got, _ := m.CancelFind(ctx, b); got.Find.State != api.StateCancelled {
		t.Errorf("b after letting go: %+v", got.Find)
	}
	for _, id := range []string{c, d} {
		if fs := waitFind(t, m, id).Find; fs.State != api.FindFound || fs.Kept {
			t.Fatalf("a search that waited: %+v, want found", fs)
		}
	}
	// Recipe 2's answer is kept (d's, the last), recipe 1's went with the
	// bound of one.
	if fs := find(start("2", false)); fs.State != api.FindFound || !fs.Kept || fs.Result == nil {
		t.Errorf("recipe 2 asked again: %+v, want its kept answer", fs)
	}
	// d, stepped once, asks again from step 0: the same search.
	st, err = m.State(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	a0, _ := json.Marshal(st.Frames[0].Enabled[0])
	if _, err := m.Step(ctx, d, a0); err != nil {
		t.Fatal(err)
	}
	if got, err := m.Find(ctx, d, []byte(`{"from_step":0}`)); err != nil || !got.Find.Kept {
		t.Errorf("recipe 2 stepped, asked again from step 0: %v, %+v, want its kept answer", err, got.Find)
	}
	if fs := find(start("1", false)); fs.Kept {
		t.Errorf("recipe 1 asked again: %+v, want a new search (one answer kept)", fs)
	}
	if n := m.Kept(); n != 1 {
		t.Errorf("%d answers kept, want 1", n)
	}
}
