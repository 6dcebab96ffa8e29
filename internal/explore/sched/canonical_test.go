package sched

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/result"
)

// TestCutStateRenamesAsTheReplacer checks that a state's text cut at its
// clients' mentions, renamed, is byte for byte the text renamer makes of
// it, the clients' parts ordered by their new names and the keys' parts
// by their renamed text: for a target without keys named after a client,
// the fingerprints are those the search always had. A target's own
// mentions (a user's key) are renamed too.
func TestCutStateRenamesAsTheReplacer(t *testing.T) {
	st := stateText{
		head: "3 1 0 2000\n",
		clients: []clientText{
			{"A", "\x01A\x02 false 0 holds <A#0> client-A\n0 GET lock -> <B#0>|\n"},
			{"B", "\x01B\x02 true -1\n1 SET lock <B#1> client-B client-C <<A# \x01\x02\n"},
			{"C", ""},
		},
		rest: "torn \"\"\n\x01C\x02 client-Ax client- \x01A\n\x01B\x02 <A#",
		keys: []string{
			"key lock\n\x01C\x02 SET <C#0> client-Ax client- \x01A\n\x01B\x02 <A#\n",
			"key {}:users:A\n\x01A\x02 HINCRBY {}:users:A funds -10\n",
			"key {}:users:B\n\x01B\x02 WATCH {}:users:B {}:users:seller\n",
			"key {}:users:C\n\x01A\x02 DEL {}:users:C {}:users:\n",
		},
	}
	names := []string{"A", "B", "C"}
	forms := append(slices.Clip(baseMentions), Mention{":users:", ""})
	cut := st.cut(names, forms)
	for _, perm := range permutations(names) {
		m := map[string]string{}
		for i, n := range names {
			m[n] = perm[i]
		}
		rn := renamer(m, forms)
		cs := slices.Clone(st.clients)
		slices.SortStableFunc(cs, func(a, b clientText) int {
			return strings.Compare(m[a.name], m[b.name])
		})
		want := st.head
		for _, c := range cs {
			want += rn.Replace(c.text)
		}
		want += rn.Replace(st.rest)
		var keys []string
		for _, k := range st.keys {
			keys = append(keys, rn.Replace(k))
		}
		slices.Sort(keys)
		want += strings.Join(keys, "")
		if got := string(cut.renamed(nil, m)); got != want {
			t.Errorf("renamed %v:\n got %q\nwant %q", m, got, want)
		}
	}
}

// TestSymmetryGroup checks which clients the symmetry renames: all of a
// target of alike clients, the declared group of one whose clients differ
// otherwise (within the model's clients), none of Go code that declares
// nothing.
func TestSymmetryGroup(t *testing.T) {
	run := Workload{Run: func(context.Context, *Client) error { return nil }}
	for _, tc := range []struct {
		name    string
		t       Target
		clients int
		want    []int
	}{
		{"alike", Target{Traits: Traits{Alike: true}}, 3, []int{0, 1, 2}},
		{"alike Go code", Target{Traits: Traits{Alike: true}, Workload: run}, 3, nil},
		{"a group", Target{Traits: Traits{Interchangeable: []int{0, 1}}, Workload: run}, 3,
			[]int{0, 1}},
		{"a group of one", Target{Traits: Traits{Interchangeable: []int{1, 2}}}, 2, nil},
		{"nothing said", Target{Workload: run}, 3, nil},
	} {
		m := action.DefaultModel()
		m.Clients = tc.clients
		if got := tc.t.symmetryGroup(m); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestCutMentionsAsTheReplacer checks the cut on texts made at random of
// the mentions' pieces, overlapping ones among them: renamed, each is
// what the replacer writes.
func TestCutMentionsAsTheReplacer(t *testing.T) {
	pieces := []string{"A", "B", "C", "<", "#", "\x01", "\x02", result.OwnerName(""), ":users:", " ", "x"}
	names := []string{"A", "B", "C"}
	// " A " and " A" begin at one place: the first in the forms' order
	// is taken, as the replacer takes the first of its pairs.
	forms := append(slices.Clip(baseMentions),
		Mention{":users:", ""}, Mention{" ", " "}, Mention{" ", ""})
	rnd := rand.New(rand.NewPCG(1, 2))
	m := map[string]string{"A": "C", "B": "A", "C": "B"}
	rn := renamer(m, forms)
	for range 2000 {
		var b strings.Builder
		for range rnd.IntN(40) {
			b.WriteString(pieces[rnd.IntN(len(pieces))])
		}
		text := b.String()
		cut := stateText{rest: text}.cut(names, forms)
		if got, want := string(cut.renamed(nil, m)), rn.Replace(text); got != want {
			t.Fatalf("text %q renamed:\n got %q\nwant %q", text, got, want)
		}
	}
}
