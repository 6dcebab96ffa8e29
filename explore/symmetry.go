package explore

import (
	"bytes"
	"slices"
	"strings"

	"github.com/lockmarket/lockmarket/explore/search"
)

// Symmetry. The clients of most targets run the same code with the same
// lease, and differ only in their names: the tokens they make (named
// <A#0>, <B#0> in the logs, world.canon) and a recipe's ${client}
// (client-A). A state and the state with two clients' names swapped go
// on alike, with the names swapped, and break the same properties. The
// state cache names a state of such a target by the least of the
// fingerprints of its renamings (canonical), so that a state reached with
// A ahead of B is cut once the search has explored it with B ahead of A;
// the sleep sets it keeps with a state are renamed alike (Rename).

// maxSymmetric is the most clients whose renamings are all tried (n! of
// them, at each decision).
const maxSymmetric = 4

// symmetric reports whether the target's clients under m are alike but
// for their names: the target says they run the same code (Target.alike:
// the recipes, their fixes and the watchdog; not the market's roles,
// readers and a writer, nor Go code of the user's, which may read
// Client.Name), with the same lease, on one server.
func (t *Target) symmetric(m Model) bool {
	if !t.alike || t.Client != nil || t.run != nil || t.rw || t.nodes > 0 || m.Clients < 2 || m.Clients > maxSymmetric {
		return false
	}
	for i := range m.Clients {
		if m.leaseOf(i) != m.leaseOf(0) {
			return false
		}
	}
	return true
}

// rename is a client's name under names (its own when not there).
func rename(names map[string]string, name string) string {
	if n, ok := names[name]; ok {
		return n
	}
	return name
}

// renamer rewrites the text of a log: without the namespace, and with
// each client's tokens and owner name under names. w.mu is held.
func (w *world) renamer(names map[string]string) *strings.Replacer {
	pairs := []string{"{" + w.t.ns, "{", w.t.ns, ""}
	for _, c := range w.clients {
		n := rename(names, c.name)
		pairs = append(pairs, "<"+c.name+"#", "<"+n+"#", ownerName(c.name), ownerName(n))
	}
	return strings.NewReplacer(pairs...)
}

// renamedOrder is the clients in the order of their names under names.
func (w *world) renamedOrder(names map[string]string) []*client {
	cs := slices.Clone(w.clients)
	slices.SortStableFunc(cs, func(a, b *client) int {
		return strings.Compare(rename(names, a.name), rename(names, b.name))
	})
	return cs
}

// canonical is the least fingerprint of the state over the renamings of
// its clients, and that renaming. w.mu is held.
func (w *world) canonical(depth, ticks, faults int) (search.Fingerprint, map[string]string, bool) {
	var names []string
	for _, c := range w.clients {
		names = append(names, c.name)
	}
	var best search.Fingerprint
	var bestNames map[string]string
	found := false
	for _, perm := range permutations(names) {
		m := map[string]string{}
		for i, n := range names {
			m[n] = perm[i]
		}
		fp, ok := w.fingerprint(depth, ticks, faults, m)
		if !ok {
			return fp, nil, false
		}
		if !found || bytes.Compare(fp[:], best[:]) < 0 {
			best, bestNames, found = fp, m, true
		}
	}
	return best, bestNames, found
}

// permutations lists every order of xs.
func permutations(xs []string) [][]string {
	if len(xs) <= 1 {
		return [][]string{slices.Clone(xs)}
	}
	var out [][]string
	for i := range xs {
		rest := slices.Concat(xs[:i], xs[i+1:])
		for _, p := range permutations(rest) {
			out = append(out, append([]string{xs[i]}, p...))
		}
	}
	return out
}

// renameChoice is c in the state with the clients renamed by names: its
// client's name, and the names in its command. A tick's client only
// labels it (the first with that deadline): renamed, it has none.
func (w *world) renameChoice(c choice, names map[string]string) choice {
	if c.Kind == Tick {
		c.Client = ""
		return c
	}
	c.Client = rename(names, c.Client)
	if c.Command != "" {
		w.mu.Lock()
		c.Command = w.renamer(names).Replace(c.Command)
		w.mu.Unlock()
	}
	return c
}

// decision is the decision of schedule s at depth, with en enabled: its
// state is the world's fingerprint, or, for a target whose clients are
// symmetric, the least of its renamings.
func (e *Explorer) decision(w *world, s *schedule, depth int, en []choice) search.Decision[choice] {
	d := search.Decision[choice]{Depth: depth, Enabled: en}
	if !e.symmetric {
		d.State = func() (search.Fingerprint, bool) {
			w.mu.Lock()
			defer w.mu.Unlock()
			return w.fingerprint(depth, s.ticks, s.faults, nil)
		}
		return d
	}
	var names map[string]string
	d.State = func() (fp search.Fingerprint, ok bool) {
		w.mu.Lock()
		defer w.mu.Unlock()
		fp, names, ok = w.canonical(depth, s.ticks, s.faults)
		return fp, ok
	}
	d.Rename = func(c choice) choice { return w.renameChoice(c, names) }
	return d
}
