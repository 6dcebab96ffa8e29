package result

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
)

// shardOf is a shard's result, i of n, of search fp.
func shardOf(i, n int, fp string, schedules int, exhaustive bool, cov float64,
	found ...Counterexample) *Result {
	return &Result{Target: "recipe 1", Mode: "exhaustive", Schedules: schedules, Pruned: 1,
		Exhaustive: exhaustive, Coverage: cov, Elapsed: time.Duration(i+1) * time.Second,
		Violations: found, Held: schedules,
		Shard: &ShardInfo{Index: i, Count: n, Depth: 4, Subtrees: 9, Runs: 2, Digest: "d",
			Fingerprint: fp, Commit: "c"}}
}

// ce is a counterexample of property p whose actions are clients' starts.
func ce(p string, clients ...string) Counterexample {
	var as []action.Action
	for _, c := range clients {
		as = append(as, action.Action{Kind: action.Start, Client: c})
	}
	return Counterexample{Violation: Violation{Property: p, Message: p}, Actions: as,
		Reproduced: true}
}

// TestMergeShards: the counts summed, the shortest counterexample of
// each property kept (the first by its actions of two as short), an
// unsteady finding dropped where another shard replayed its property,
// exhaustive only if every shard was; the result's JSON reads back.
func TestMergeShards(t *testing.T) {
	a := shardOf(0, 3, "f", 10, true, 0.5, ce(Resource, "B", "A", "A"), ce(Liveness, "A"))
	b := shardOf(1, 3, "f", 20, true, 0.25, ce(Resource, "A", "B"))
	c := shardOf(2, 3, "f", 5, true, 0.25, ce(Resource, "B", "A"))
	c.Unsteady = []Counterexample{ce(Liveness, "C"), ce(MutualExclusion, "C")}
	m, err := MergeShards([]Part{{"a", a}, {"b", b}, {"c", c}})
	if err != nil {
		t.Fatal(err)
	}
	if m.Schedules != 35 || m.Pruned != 3 || m.Held != 35 || !m.Exhaustive || m.Coverage != 1 ||
		m.Elapsed != 3*time.Second || m.Shard != nil || m.MergedShards != 3 {
		t.Errorf("merged: %+v", m)
	}
	var got []string
	for _, v := range m.Violations {
		got = append(got, v.Property+":"+v.Actions[0].Client+v.Actions[1%len(v.Actions)].Client)
	}
	if strings.Join(got, " ") != "resource:AB liveness:AA" {
		t.Errorf("violations %v, want resource as A then B (the first of the shortest), "+
			"liveness", got)
	}
	if len(m.Unsteady) != 1 || m.Unsteady[0].Property != MutualExclusion {
		t.Errorf("unsteady %v, want mutual_exclusion alone", m.Unsteady)
	}
	b.Exhaustive, b.Stopped = false, StoppedBudget
	m, err = MergeShards([]Part{{"a", a}, {"b", b}, {"c", c}})
	if err != nil || m.Exhaustive || m.Coverage >= 1 || m.Stopped != StoppedBudget {
		t.Errorf("a shard cut short: %v, exhaustive %v, coverage %v, stopped %q",
			err, m.Exhaustive, m.Coverage, m.Stopped)
	}
	js, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	var back Result
	err = json.Unmarshal(js, &back)
	if err != nil || back.Shard == nil || *back.Shard != *a.Shard {
		t.Errorf("the shard block read back as %+v (%v), want %+v", back.Shard, err, a.Shard)
	}
}

// TestMergeShardsRefuses: what is not every shard of one search once is
// refused, naming the part.
func TestMergeShardsRefuses(t *testing.T) {
	whole := shardOf(0, 2, "f", 1, true, 1)
	whole.Shard = nil
	other := shardOf(1, 2, "f", 1, true, 0.5)
	other.Target = "recipe 2"
	commit := shardOf(1, 2, "f", 1, true, 0.5)
	commit.Shard.Commit = "d"
	cut := shardOf(1, 2, "f", 1, true, 0.5)
	cut.Shard.Digest = "e"
	sh := func(i, n int, fp string) *Result { return shardOf(i, n, fp, 1, true, 0.5) }
	for _, tc := range []struct {
		name  string
		parts []Part
		want  string
	}{
		{"none", nil, "no shard given"},
		{"missing", []Part{{"x", sh(0, 3, "f")}, {"y", sh(2, 3, "f")}}, "shard 1/3 missing"},
		{"twice", []Part{{"x", sh(0, 2, "f")}, {"y", sh(0, 2, "f")}},
			"y: shard 0/2 given twice (x is it too)"},
		{"no shard", []Part{{"x", sh(0, 2, "f")}, {"w", whole}}, "w: not a shard"},
		{"count", []Part{{"x", sh(0, 2, "f")}, {"y", sh(1, 3, "f")}},
			"y: a shard of 3, x one of 2"},
		{"target", []Part{{"x", sh(0, 2, "f")}, {"o", other}}, `o: a shard of "recipe 2"`},
		{"options", []Part{{"x", sh(0, 2, "f")}, {"g", sh(1, 2, "g")}},
			"g: a shard of another search"},
		{"commit", []Part{{"x", sh(0, 2, "f")}, {"c", commit}}, "c: written by d, x by c"},
		{"cut", []Part{{"x", sh(0, 2, "f")}, {"e", cut}}, "e: its search cut the tree"},
	} {
		_, err := MergeShards(tc.parts)
		if !errors.Is(err, ErrMerge) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrMerge and %q", tc.name, err, tc.want)
		}
	}
}
