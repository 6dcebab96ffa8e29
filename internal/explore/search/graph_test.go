package search

import (
	"errors"
	"testing"
)

// record is a shard's record of parts (Explored), written by a recorder
// as a search would: each part's index, then fill's nodes.
func record(units int, parts map[int]func(r *recorder[string])) *Explored[string] {
	r := newRecorder[string](units)
	for u := range units {
		if fill, ok := parts[u]; ok {
			r.unit(u)
			fill(r)
		}
	}
	e, err := r.explored()
	if err != nil {
		panic(err)
	}
	return e
}

// fp is a state's fingerprint, named by a byte.
func fp(b byte) Fingerprint { return Fingerprint{b} }

// TestRecountCountsAsTheWholeSearch: a state the first part reached is
// cut in the second (its sleep set holds the first's), one reached with
// a smaller sleep set is not, and a part that ended above the split is
// counted as it ended.
func TestRecountCountsAsTheWholeSearch(t *testing.T) {
	first := func(r *recorder[string]) {
		r.decision(1) // the subtree's root: no state looked up
		r.state(fp(1), []string{"a"})
		r.decision(2)
		r.end(true)
		r.end(true)
	}
	second := func(r *recorder[string]) {
		r.decision(2)
		r.state(fp(1), []string{"a", "b"}) // the whole search cuts it
		r.decision(1)
		r.end(true)
		r.state(fp(1), []string{}) // a smaller sleep set: searched
		r.decision(0)              // every child asleep
	}
	third := func(r *recorder[string]) { r.end(false) }
	a := record(3, map[int]func(*recorder[string]){0: first, 2: third})
	b := record(3, map[int]func(*recorder[string]){1: second})
	st, err := Recount([]*Explored[string]{a, b})
	if err != nil || st.Schedules != 2 || st.Pruned != 3 {
		t.Errorf("recounted %+v, %v; want 2 schedules and 3 cut", st, err)
	}
}

// TestRecountRefuses: parts missing, given twice, of splits that differ,
// a record that does not read, and one that cut a state the whole search
// goes on from, each named by its part.
func TestRecountRefuses(t *testing.T) {
	leaf := func(r *recorder[string]) { r.decision(1); r.end(true) }
	cut := func(r *recorder[string]) {
		r.decision(1)
		r.state(fp(9), nil)
		r.cut()
	}
	a := record(2, map[int]func(*recorder[string]){0: leaf})
	b := record(2, map[int]func(*recorder[string]){1: leaf})
	bad := *b
	bad.Data = bad.Data[:len(bad.Data)/2]
	other := record(3, map[int]func(*recorder[string]){1: leaf})
	wrongCut := record(2, map[int]func(*recorder[string]){1: cut})
	for _, tc := range []struct {
		name  string
		parts []*Explored[string]
		part  int // the part named, -1 for none
	}{
		{"missing", []*Explored[string]{a}, -1},
		{"twice", []*Explored[string]{a, b, b}, 2},
		{"another split", []*Explored[string]{a, other}, 1},
		{"cut short", []*Explored[string]{a, &bad}, 1},
		{"cut where the whole search goes on", []*Explored[string]{a, wrongCut}, 1},
		{"none", nil, -1},
	} {
		_, err := Recount(tc.parts)
		var pe *PartError
		switch {
		case !errors.Is(err, ErrRecount):
			t.Errorf("%s: %v, want ErrRecount", tc.name, err)
		case tc.part >= 0 && (!errors.As(err, &pe) || pe.Part != tc.part):
			t.Errorf("%s: %v, want part %d named", tc.name, err, tc.part)
		}
	}
}

// TestRecordBounded: a record that outgrows its bound (MaxExplored; here
// 4 KiB, to be quick) is given up, and so is one of a part whose replay
// diverged.
func TestRecordBounded(t *testing.T) {
	r := newRecorder[string](1)
	if r.remaining != MaxExplored {
		t.Fatalf("a record's bound is %d, want %d", r.remaining, MaxExplored)
	}
	r.remaining = 4 << 10
	r.unit(0)
	for i := 0; !r.off(); i++ {
		r.state(Fingerprint{byte(i), byte(i >> 8), byte(i >> 16)}, []string{"a", "b"})
		r.decision(1)
		if i*len(stateID{}) > 4<<10 {
			t.Fatalf("%d nodes kept", i)
		}
	}
	if e, _ := r.explored(); e != nil {
		t.Errorf("a record of %d nodes past the bound", e.Nodes)
	}
	r = newRecorder[string](1)
	r.unit(0)
	r.decision(1)
	r.settled(true, ErrNotEnabled)
	if e, _ := r.explored(); e != nil {
		t.Errorf("a record of a part that diverged: %d nodes", e.Nodes)
	}
}
