package sched

import (
	"slices"
	"strings"
	"testing"
)

// TestCutStateRenamesAsTheReplacer checks that a state's text cut at its
// clients' mentions, renamed, is byte for byte the text renamer makes of
// it, the clients' parts ordered by their new names: the fingerprints
// are those the search always had.
func TestCutStateRenamesAsTheReplacer(t *testing.T) {
	st := stateText{
		head: "3 1 0 2000\n",
		clients: []clientText{
			{"A", "\x01A\x02 false 0 holds <A#0> client-A\n0 GET lock -> <B#0>|\n"},
			{"B", "\x01B\x02 true -1\n1 SET lock <B#1> client-B client-C <<A# \x01\x02\n"},
			{"C", ""},
		},
		rest: "key lock\n\x01C\x02 SET <C#0> client-Ax client- \x01A\n\x01B\x02 <A#",
	}
	names := []string{"A", "B", "C"}
	cut := st.cut(names)
	for _, perm := range permutations(names) {
		m := map[string]string{}
		for i, n := range names {
			m[n] = perm[i]
		}
		rn := renamer(m)
		cs := slices.Clone(st.clients)
		slices.SortStableFunc(cs, func(a, b clientText) int {
			return strings.Compare(m[a.name], m[b.name])
		})
		want := st.head
		for _, c := range cs {
			want += rn.Replace(c.text)
		}
		want += rn.Replace(st.rest)
		if got := string(cut.renamed(nil, m)); got != want {
			t.Errorf("renamed %v:\n got %q\nwant %q", m, got, want)
		}
	}
}
