package sched

import (
	"bytes"
	"crypto/sha256"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/explore/search"
)

// Symmetry. The clients of most targets run the same code with the same
// lease, and differ only in their names: the tokens they make (named
// <A#0>, <B#0> in the logs, world.replaceTokens) and a recipe's ${client}
// (client-A). A state and the state with two clients' names swapped go
// on alike, with the names swapped, and break the same properties. The
// state cache names a state of such a target by the least of the
// fingerprints of its renamings (canonical), so that a state reached with
// A ahead of B is cut once the search has explored it with B ahead of A;
// the sleep sets it keeps with a state are renamed alike (Rename). A
// target may declare such a group among clients that differ otherwise
// (Traits.Interchangeable: the market's two buyers, not its seller), with
// the ways its code writes their names (Traits.Mentions): only the group
// is renamed.

// maxSymmetric is the most clients whose renamings are all tried (n! of
// them, at each decision).
const maxSymmetric = 4

// symmetric reports whether two or more of the target's clients under m
// are alike but for their names (symmetryGroup).
func (t *Target) symmetric(m action.Model) bool { return len(t.symmetryGroup(m)) > 1 }

// symmetryGroup is, by index, the clients under m whose names the
// symmetry swaps: those the target declares interchangeable
// (Traits.Interchangeable), or all of them when it says they run the same
// code (Traits.Alike: the recipes, their fixes and the watchdog; not
// readers and a writer, nor Go code of the user's, which may read
// Client.Name); each with the same lease, on one server. It is nil when
// there are not two.
func (t *Target) symmetryGroup(m action.Model) []int {
	if t.lock().ReadWrite || t.Nodes() > 0 {
		return nil
	}
	var group []int
	switch {
	case len(t.Traits.Interchangeable) > 0:
		for _, i := range t.Traits.Interchangeable {
			if i >= 0 && i < m.Clients && !slices.Contains(group, i) {
				group = append(group, i)
			}
		}
	case t.Traits.Alike && t.Workload.Run == nil:
		for i := range m.Clients {
			group = append(group, i)
		}
	}
	if len(group) < 2 || len(group) > maxSymmetric {
		return nil
	}
	for _, i := range group {
		if m.LeaseOf(i) != m.LeaseOf(group[0]) {
			return nil
		}
	}
	return group
}

// renamed is the names of the clients the symmetry renames: the target's
// Interchangeable ones, or all. w.mu is held.
func (w *world) renamed() []string {
	var names []string
	for _, c := range w.Clients {
		if g := w.Target.Traits.Interchangeable; len(g) == 0 || slices.Contains(g, c.Index) {
			names = append(names, c.Name)
		}
	}
	return names
}

// baseMentions are the forms of a client's name in every target's state:
// marked ("\x01A\x02", stateText), in a token ("<A#", replaceTokens), as
// an owner (OwnerName).
var baseMentions = []Mention{{"\x01", "\x02"}, {"<", "#"}, {result.OwnerName(""), ""}}

// mentions is the forms of a client's name the symmetry renames: the
// base ones, then the target's own (Traits.Mentions).
func (t *Target) mentions() []Mention {
	return append(slices.Clip(baseMentions), t.Traits.Mentions...)
}

// renamers holds, by renaming, the rewriting of a state's text it makes
// (renamer).
var renamers sync.Map

// renamer rewrites the text of a state (stateText), or a command's, with
// the clients renamed by names in each of the forms: their marked names,
// their tokens, their owner names and the target's own (mentions).
func renamer(names map[string]string, forms []Mention) *strings.Replacer {
	olds := slices.Sorted(maps.Keys(names))
	var id strings.Builder
	for _, o := range olds {
		id.WriteString(o + ">" + names[o] + " ")
	}
	for _, f := range forms {
		id.WriteString(strconv.Quote(f.Before) + strconv.Quote(f.After))
	}
	if r, ok := renamers.Load(id.String()); ok {
		return r.(*strings.Replacer)
	}
	var pairs []string
	for _, o := range olds {
		for _, f := range forms {
			pairs = append(pairs, mentionForm(o, f), mentionForm(names[o], f))
		}
	}
	r := strings.NewReplacer(pairs...)
	renamers.Store(id.String(), r)
	return r
}

// canonical is the least fingerprint of the state over the renamings of
// its clients (those of the target's group), and that renaming. w.mu is
// held.
func (w *world) canonical(depth, ticks, faults int) (search.Fingerprint, map[string]string, bool) {
	st, ok := w.state(depth, ticks, faults)
	if !ok {
		return search.Fingerprint{}, nil, false
	}
	names := w.renamed()
	cut := st.cut(names, w.Target.mentions())
	var best search.Fingerprint
	var bestNames map[string]string
	var buf []byte
	for i, perm := range permutations(names) {
		m := map[string]string{}
		for i, n := range names {
			m[n] = perm[i]
		}
		buf = cut.renamed(buf[:0], m)
		fp := search.Fingerprint(sha256.Sum256(buf))
		if i == 0 || bytes.Compare(fp[:], best[:]) < 0 {
			best, bestNames = fp, m
		}
	}
	return best, bestNames, true
}

// cutState is the text of a state cut at each mention of a client in
// the forms renamer rewrites, so that each renaming is written out
// without searching the text again: what renamer would make of it, byte
// for byte, with the clients' parts and the keys' parts each in the order
// of their renamed text.
type cutState struct {
	head    string
	clients []cutClient
	rest    []mention
	keys    [][]mention
	forms   []Mention
}

type cutClient struct {
	name string
	text []mention
}

// mention is a piece of a state's text: lit, then, when client is not
// "", the client's name written in the form of index form (a cutState's
// forms).
type mention struct {
	lit    string
	client string
	form   int
}

// appendMention appends client's name written in form f.
func appendMention(buf []byte, client string, f Mention) []byte {
	return append(append(append(buf, f.Before...), client...), f.After...)
}

// mentionForm is client's name written in form f (appendMention).
func mentionForm(client string, f Mention) string {
	return string(appendMention(nil, client, f))
}

// cut cuts st at the mentions of the clients names in the forms.
func (st stateText) cut(names []string, forms []Mention) cutState {
	var pats []mentionPattern
	for _, n := range names {
		for form, f := range forms {
			pats = append(pats, mentionPattern{mentionForm(n, f), n, form})
		}
	}
	next := make([]int, len(pats))
	c := cutState{head: st.head, rest: cutMentions(st.rest, pats, next), forms: forms}
	for _, ct := range st.clients {
		text := cutMentions(ct.text, pats, next)
		c.clients = append(c.clients, cutClient{name: ct.name, text: text})
	}
	for _, k := range st.keys {
		c.keys = append(c.keys, cutMentions(k, pats, next))
	}
	return c
}

// mentionPattern is one client's name written in one form.
type mentionPattern struct {
	text, client string
	form         int
}

// cutMentions cuts text at the mentions pats stand for, from left to
// right: at the leftmost place where any of them begins, the first of
// pats that begins there, then on after it. It finds each pattern's next
// place with strings.Index (next holds them, one per pattern, -1 once a
// pattern is found no more), so the text is read once per pattern rather
// than tried against every pattern at each of its bytes.
func cutMentions(text string, pats []mentionPattern, next []int) []mention {
	find := func(p int, from int) {
		j := strings.Index(text[from:], pats[p].text)
		if j >= 0 {
			j += from
		}
		next[p] = j
	}
	for p := range pats {
		find(p, 0)
	}
	var out []mention
	from := 0
	for {
		best := -1
		for p, j := range next {
			if j >= 0 && (best < 0 || j < next[best]) {
				best = p
			}
		}
		if best < 0 {
			break
		}
		at := next[best]
		p := pats[best]
		out = append(out, mention{lit: text[from:at], client: p.client, form: p.form})
		from = at + len(p.text)
		for q, j := range next {
			if j >= 0 && j < from {
				find(q, from)
			}
		}
	}
	return append(out, mention{lit: text[from:], form: -1})
}

// renamed appends to buf the state's text with its clients renamed by
// names (a client it does not hold keeps its name), each client's part in
// the order of its new name, each key's part in the order of its renamed
// text (which begins with the key's name).
func (c cutState) renamed(buf []byte, names map[string]string) []byte {
	name := func(n string) string {
		if r, ok := names[n]; ok {
			return r
		}
		return n
	}
	buf = append(buf, c.head...)
	cs := slices.Clone(c.clients)
	slices.SortStableFunc(
		cs, func(a, b cutClient) int { return strings.Compare(name(a.name), name(b.name)) },
	)
	write := func(buf []byte, ms []mention) []byte {
		for _, m := range ms {
			buf = append(buf, m.lit...)
			if m.client != "" {
				buf = appendMention(buf, name(m.client), c.forms[m.form])
			}
		}
		return buf
	}
	for _, ct := range cs {
		buf = write(buf, ct.text)
	}
	buf = write(buf, c.rest)
	keys := make([][]byte, len(c.keys))
	for i, k := range c.keys {
		keys[i] = write(nil, k)
	}
	slices.SortFunc(keys, bytes.Compare)
	for _, k := range keys {
		buf = append(buf, k...)
	}
	return buf
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
func renameChoice(c Choice, names map[string]string, forms []Mention) Choice {
	if c.Kind == action.Tick {
		c.Client = ""
		return c
	}
	if n, ok := names[c.Client]; ok {
		c.Client = n
	}
	c.Command = renamer(names, forms).Replace(c.Command)
	return c
}

// decision is the decision of schedule s at depth, with en enabled: its
// state is the world's fingerprint, or, for a target whose clients are
// symmetric, the least of its renamings.
func (e *Explorer) decision(w *world, s *Schedule, depth int, en []Choice) search.Decision[Choice] {
	d := search.Decision[Choice]{Depth: depth, Enabled: en}
	if !e.Symmetric {
		d.State = func() (search.Fingerprint, bool) {
			w.mu.Lock()
			defer w.mu.Unlock()
			return w.fingerprint(depth, s.Ticks, s.Faults)
		}
		return d
	}
	var names map[string]string
	d.State = func() (fp search.Fingerprint, ok bool) {
		w.mu.Lock()
		defer w.mu.Unlock()
		fp, names, ok = w.canonical(depth, s.Ticks, s.Faults)
		return fp, ok
	}
	forms := e.target.mentions()
	d.Rename = func(c Choice) Choice { return renameChoice(c, names, forms) }
	return d
}

// Canonical is the least fingerprint of the state over the renamings of
// its clients, and that renaming (canonical).
func (w *world) Canonical(depth, ticks, faults int) (search.Fingerprint, map[string]string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.canonical(depth, ticks, faults)
}

// Canonical is the least fingerprint of the state the schedule stopped
// in, over the renamings of its clients, and that renaming; ok is false
// when a command touched keys it does not name.
func (s *Schedule) Canonical() (fp search.Fingerprint, names map[string]string, ok bool) {
	return s.world.Canonical(len(s.Steps), s.Ticks, s.Faults)
}
