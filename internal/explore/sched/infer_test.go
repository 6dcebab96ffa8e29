package sched

import (
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/plumbing"
)

// TestInferHold follows holds from commands on lock keys: a SET NX with a
// lease that succeeds holds the key until the lease ends, a failed one
// does not, and the holder's next script on the key ends its hold. Two
// successful SET NX of one key (a broken lock) are two holders. The
// leases in the commands are dilated (10 s of virtual time is EX
// 10000000).
func TestInferHold(t *testing.T) {
	const ns = "{x}:"
	lock := ns + "lock:item:sword"
	w := &world{Target: &Target{ns: ns, Traits: Traits{InferHolds: true}}, Factor: plumbing.Dilation}
	a, b := &clientState{world: w, Name: "A"}, &clientState{world: w, Name: "B"}
	w.Clients = []*clientState{a, b}
	names := func() []string {
		var out []string
		for _, c := range w.holders() {
			out = append(out, c.Name)
		}
		return out
	}
	steps := []struct {
		c           *clientState
		args        []string
		value, err  string
		at          time.Duration
		wantHolders []string
		wantEndOfA  time.Duration
	}{
		{
			a,
			[]string{"set", lock, "tokA", "ex", "10000000", "nx", "get"},
			"(nil)",
			"",
			0,
			[]string{"A"},
			10 * time.Second,
		},
		{
			b,
			[]string{"set", lock, "tokB", "ex", "10000000", "nx", "get"},
			"tokA",
			"",
			0,
			[]string{"A"},
			10 * time.Second,
		},
		{
			b,
			[]string{"set", ns + "users:B", "1", "px", "10", "nx"},
			"OK",
			"",
			0,
			[]string{"A"},
			10 * time.Second,
		},
		{
			b,
			[]string{"set", lock, "tokB", "px", "3000000000", "nx"},
			"OK",
			"",
			2 * time.Second,
			[]string{"A", "B"},
			10 * time.Second,
		},
		{
			a,
			[]string{"evalsha", "abc", "1", lock, "tokA"},
			"1",
			"",
			2 * time.Second,
			[]string{"B"},
			-1,
		},
		{
			b,
			[]string{"set", lock, "tokB", "px", "3000000000", "nx"},
			"",
			"ERR",
			2 * time.Second,
			[]string{"B"},
			-1,
		},
		{b, []string{"evalsha", "abc", "1", lock, "tokB"}, "0", "", 6 * time.Second, nil, -1},
	}
	for i, st := range steps {
		w.Now = st.at
		w.inferHold(st.c, st.args, st.value, st.err)
		got := names()
		if len(got) != len(st.wantHolders) {
			t.Fatalf("step %d: holders %v, want %v", i+1, got, st.wantHolders)
		}
		for j := range got {
			if got[j] != st.wantHolders[j] {
				t.Fatalf("step %d: holders %v, want %v", i+1, got, st.wantHolders)
			}
		}
		endA := time.Duration(-1)
		if a.holding != nil {
			endA = a.holding.End()
		}
		if endA != st.wantEndOfA {
			t.Errorf("step %d: A's lease ends at %v, want %v", i+1, endA, st.wantEndOfA)
		}
	}
}

// TestCheckHoldersByKey: two clients holding locks of different keys (two
// listings) break nothing; two of one key break mutual exclusion.
func TestCheckHoldersByKey(t *testing.T) {
	forever := func() time.Duration { return -1 }
	for _, tc := range []struct {
		keyA, keyB string
		broken     bool
	}{
		{"lock:item:sword", "lock:item:shield", false},
		{"lock:item:sword", "lock:item:sword", true},
	} {
		w := &world{Target: &Target{}}
		a := &clientState{world: w, Name: "A", holding: &hold{Write: true, Key: tc.keyA, End: forever}}
		b := &clientState{world: w, Name: "B", holding: &hold{Write: true, Key: tc.keyB, End: forever}}
		w.Clients = []*clientState{a, b}
		s := &Schedule{Steps: []action.Step{{}}}
		w.checkHolders(s)
		if got := len(s.Violations) > 0; got != tc.broken {
			t.Errorf(
				"A holds %s, B holds %s: violations %v, want broken %v", tc.keyA, tc.keyB,
				s.Violations, tc.broken,
			)
		}
	}
}
