package sched

import (
	"bytes"
	"crypto/sha256"
	"maps"
	"slices"
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
// the sleep sets it keeps with a state are renamed alike (Rename).

// maxSymmetric is the most clients whose renamings are all tried (n! of
// them, at each decision).
const maxSymmetric = 4

// symmetric reports whether the target's clients under m are alike but
// for their names: the target says they run the same code (Target.alike:
// the recipes, their fixes and the watchdog; not the market's roles,
// readers and a writer, nor Go code of the user's, which may read
// Client.Name), with the same lease, on one server.
func (t *Target) symmetric(m action.Model) bool {
	if !t.Traits.Alike || t.Workload.Run != nil || t.lock().ReadWrite || t.Nodes() > 0 ||
		m.Clients < 2 || m.Clients > maxSymmetric {
		return false
	}
	for i := range m.Clients {
		if m.LeaseOf(i) != m.LeaseOf(0) {
			return false
		}
	}
	return true
}

// renamers holds, by renaming, the rewriting of a state's text it makes
// (renamer).
var renamers sync.Map

// renamer rewrites the text of a state (stateText), or a command's, with
// the clients renamed by names: their marked names, their tokens and
// their owner names.
func renamer(names map[string]string) *strings.Replacer {
	olds := slices.Sorted(maps.Keys(names))
	var id strings.Builder
	for _, o := range olds {
		id.WriteString(o + ">" + names[o] + " ")
	}
	if r, ok := renamers.Load(id.String()); ok {
		return r.(*strings.Replacer)
	}
	var pairs []string
	for _, o := range olds {
		for form := range mentionForms {
			pairs = append(pairs, mentionForm(o, form), mentionForm(names[o], form))
		}
	}
	r := strings.NewReplacer(pairs...)
	renamers.Store(id.String(), r)
	return r
}

// canonical is the least fingerprint of the state over the renamings of
// its clients, and that renaming. w.mu is held.
func (w *world) canonical(depth, ticks, faults int) (search.Fingerprint, map[string]string, bool) {
	st, ok := w.state(depth, ticks, faults)
	if !ok {
		return search.Fingerprint{}, nil, false
	}
	var names []string
	for _, c := range w.Clients {
		names = append(names, c.Name)
	}
	cut := st.cut(names)
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
// for byte.
type cutState struct {
	head    string
	clients []cutClient
	rest    []mention
}

type cutClient struct {
	name string
	text []mention
}

// mention is a piece of a state's text: lit, then, when client is not
// "", the client's name written in form (appendMention).
type mention struct {
	lit    string
	client string
	form   int
}

// mentionForms is how many forms of a client's name renamer rewrites
// (appendMention).
const mentionForms = 3

// appendMention appends client's name written in form: 0 marked
// ("\x01A\x02", stateText), 1 in a token ("<A#", replaceTokens), 2 as an
// owner (OwnerName).
func appendMention(buf []byte, client string, form int) []byte {
	switch form {
	case 0:
		buf = append(append(append(buf, '\x01'), client...), '\x02')
	case 1:
		buf = append(append(append(buf, '<'), client...), '#')
	case 2:
		buf = append(buf, result.OwnerName(client)...)
	}
	return buf
}

// mentionForm is client's name written in form (appendMention).
func mentionForm(client string, form int) string {
	return string(appendMention(nil, client, form))
}

// cut cuts st at the mentions of the clients names.
func (st stateText) cut(names []string) cutState {
	type pattern struct {
		text, client string
		form         int
	}
	var pats []pattern
	starts := ""
	for _, n := range names {
		for form := range mentionForms {
			text := mentionForm(n, form)
			pats = append(pats, pattern{text, n, form})
			if !strings.Contains(starts, text[:1]) {
				starts += text[:1]
			}
		}
	}
	cutText := func(text string) []mention {
		var out []mention
		from := 0
		for i := 0; i < len(text); {
			j := strings.IndexAny(text[i:], starts)
			if j < 0 {
				break
			}
			i += j
			matched := false
			for _, p := range pats {
				if strings.HasPrefix(text[i:], p.text) {
					out = append(out, mention{lit: text[from:i], client: p.client, form: p.form})
					i += len(p.text)
					from, matched = i, true
					break
				}
			}
			if !matched {
				i++
			}
		}
		return append(out, mention{lit: text[from:], form: -1})
	}
	c := cutState{head: st.head, rest: cutText(st.rest)}
	for _, ct := range st.clients {
		c.clients = append(c.clients, cutClient{name: ct.name, text: cutText(ct.text)})
	}
	return c
}

// renamed appends to buf the state's text with its clients renamed by
// names, each client's part in the order of its new name.
func (c cutState) renamed(buf []byte, names map[string]string) []byte {
	buf = append(buf, c.head...)
	cs := slices.Clone(c.clients)
	slices.SortStableFunc(
		cs, func(a, b cutClient) int { return strings.Compare(names[a.name], names[b.name]) },
	)
	write := func(ms []mention) {
		for _, m := range ms {
			buf = append(buf, m.lit...)
			if m.client != "" {
				buf = appendMention(buf, names[m.client], m.form)
			}
		}
	}
	for _, ct := range cs {
		write(ct.text)
	}
	write(c.rest)
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
func renameChoice(c Choice, names map[string]string) Choice {
	if c.Kind == action.Tick {
		c.Client = ""
		return c
	}
	if n, ok := names[c.Client]; ok {
		c.Client = n
	}
	c.Command = renamer(names).Replace(c.Command)
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
	d.Rename = func(c Choice) Choice { return renameChoice(c, names) }
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
