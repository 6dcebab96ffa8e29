package view

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/plumbing"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/explore/sched"
	"github.com/lockmarket/lockmarket/internal/redis/rediscmd"
	"github.com/lockmarket/lockmarket/internal/report/output"
)

// ClientView is one client as a person stepping a schedule sees it: what
// it read, the token it holds, whether it believes it holds the lock, and
// its lease on the virtual clock.
type ClientView struct {
	// Client is the client's name ("A").
	Client string `json:"client"`
	// Status is where the client stands, in words: "not started",
	// "taking the lock", "holding the lock", "paused", "crashed", "done".
	Status string `json:"status"`
	// Believes is set while the client's code believes it holds the lock
	// (it took it and has not released it), whether or not its lease has
	// run out.
	Believes bool `json:"believes_held"`
	// Token names the token of the hold it believes in ("A#1": its first
	// token), the same on every replay; "" when it holds none.
	Token string `json:"token"`
	// Fence is the fencing token its take returned, "" when none.
	Fence string `json:"fence,omitempty"`
	// LeaseUntilMS is when its lease runs out on the virtual clock, -1
	// for no expiry or no hold.
	LeaseUntilMS int64 `json:"lease_until_ms"`
	// LeaseMS is the lease's length.
	LeaseMS int64 `json:"lease_ms"`
	// Read is the last value it read of the protected resource
	// ("counter = 0"), "" before its first read.
	Read string `json:"read"`
	// Wrote is the last value it wrote there, "" before its first write.
	Wrote string `json:"wrote"`
	// PausedUntilMS is when its pause ends, -1 for good; 0 when it is
	// not paused.
	PausedUntilMS int64 `json:"paused_until_ms,omitempty"`
}

// StepNote is one step of a schedule said in plain words.
type StepNote struct {
	// Say is the step as a sentence: what was sent, what the reply
	// means, who holds what after it ("(nil): the lock was free; A now
	// holds it").
	Say string `json:"say"`
	// FenceRefused is set on a step where a fenced write was refused: the
	// fence stopped a client that no longer held the lock.
	FenceRefused bool `json:"fence_refused,omitempty"`
	// Text is the step's own text with every token by its name.
	Text string `json:"text"`
}

// Chain is the causal chain of a broken property: the steps that led to
// it, in order, each with a few words naming its client.
type Chain struct {
	// Property is the property broken.
	Property string `json:"property"`
	// Step is where the property broke.
	Step int `json:"step"`
	// Links are the steps that led there, in order.
	Links []ChainLink `json:"links"`
	// Story is the links' words in one sentence.
	Story string `json:"story"`
}

// ChainLink is one step of a causal chain.
type ChainLink struct {
	// Step is the step's index among the schedule's steps (from 0).
	Step int `json:"step"`
	// Text says what the step did, in words.
	Text string `json:"text"`
}

// cmdView is one command of a step, read for the words: undilated
// arguments, tokens by name.
type cmdView struct {
	client string
	args   []string
	value  string // "(nil)" for a nil reply
	err    string
	lock   rediscmd.Lock
	isLock bool
}

// Narration is a schedule told for a person: it reads the schedule's
// commands in order and says each step (Notes), each client as it stands
// at the end (Views) and how each violation came about (Chains). Narrate
// makes one.
type Narration struct {
	// Notes says each step of the schedule, in order.
	Notes []StepNote

	e     *sched.Explorer
	s     *sched.Schedule
	names map[string]string // token -> "A#1"
	count map[string]int    // client -> tokens named
	// owner is who holds each lock key as Redis sees it; lastTake each
	// client's last successful take (step).
	owner    map[string]string
	lastTake map[string]int
	read     map[string]string
	wrote    map[string]string
	token    map[string]string
	fence    map[string]string
	watching map[string]bool
	byStep   map[int][]cmdView
	// events kept for the causal chains, by step.
	took     map[int]string   // step -> client that took the lock
	expired  map[int][]string // step -> clients whose lease ran out
	reads    []access
	writes   []access
	released map[int]string
	extended map[int]string // step -> client whose extension answered a success
}

// access is a read or a write of the protected resource.
type access struct {
	step   int
	client string
	key    string
	value  string
}

// Narrate tells schedule s, run by e, step by step.
func Narrate(e *sched.Explorer, s *sched.Schedule) *Narration {
	n := &Narration{
		e:        e,
		s:        s,
		names:    map[string]string{},
		count:    map[string]int{},
		owner:    map[string]string{},
		lastTake: map[string]int{},
		read:     map[string]string{},
		wrote:    map[string]string{},
		token:    map[string]string{},
		fence:    map[string]string{},
		watching: map[string]bool{},
		byStep:   map[int][]cmdView{},
		took:     map[int]string{},
		expired:  map[int][]string{},
		released: map[int]string{},
		extended: map[int]string{},
	}
	for _, r := range s.CmdLog {
		for j, args := range r.Args {
			args = plumbing.VirtualArgs(e.Factor, args)
			cv := cmdView{client: r.Client, args: args, value: r.Values[j], err: r.Errs[j]}
			cv.lock, cv.isLock = rediscmd.ReadLock(args, cv.value, cv.err, e.Target().IsLock)
			n.nameTokens(cv)
			n.byStep[r.Step] = append(n.byStep[r.Step], cv)
		}
	}
	n.Notes = make([]StepNote, len(s.Steps))
	for i, st := range s.Steps {
		n.Notes[i] = n.say(i, st)
		n.Notes[i].Text = n.name(st.Text)
	}
	return n
}

// nameTokens names the tokens a client sends when it tries to take a lock:
// its first is A#1, its second A#2.
func (n *Narration) nameTokens(cv cmdView) {
	tok := ""
	switch {
	case cv.isLock && (cv.lock.Op == rediscmd.Acquire || cv.lock.Op == rediscmd.AcquireFailed):
		tok = cv.lock.Token
	case rediscmd.Name(cv.args) == "eval" || rediscmd.Name(cv.args) == "evalsha":
		if keys, argv, ok := rediscmd.ScriptArgs(cv.args); ok && len(keys) > 0 && len(argv) > 0 &&
			n.e.Target().IsLock(keys[0]) && strings.Contains(scriptName(cv.args), "acquire") {
			tok = argv[0]
		}
	}
	if tok == "" || cv.client == "" {
		return
	}
	if _, ok := n.names[tok]; ok {
		return
	}
	n.count[cv.client]++
	n.names[tok] = fmt.Sprintf("%s#%d", cv.client, n.count[cv.client])
}

func scriptName(args []string) string {
	if len(args) < 2 {
		return ""
	}
	return rediscmd.ScriptName(args[1])
}

// name is s with every token replaced by its name.
func (n *Narration) name(s string) string {
	if nm, ok := n.names[s]; ok {
		return nm
	}
	for tok, nm := range n.names {
		if len(tok) >= 8 {
			s = strings.ReplaceAll(s, tok, nm)
		}
	}
	return s
}

// short is key k without the explorer's namespace.
func (n *Narration) short(k string) string { return n.e.Target().Short(k) }

func at(ms int64) string { return output.Thousands(ms) + " ms" }

// say is step i in words.
func (n *Narration) say(i int, st action.Step) StepNote {
	a := st.Action
	switch a.Kind {
	case action.Start:
		return StepNote{
			Say: a.Client + " starts its critical section: first it must take the lock.",
		}
	case action.Tick:
		return n.sayTick(i, st)
	case action.Pause:
		text := a.Client + " pauses"
		switch a.Length {
		case "forever":
			text += " for good: alive but silent"
		default:
			if d, ok := n.e.Model().PauseLength(a.Length); ok && d >= 0 {
				text += fmt.Sprintf(
					" until %s (a stop-the-world GC, a stalled VM)",
					at((time.Duration(st.ClockMS)*time.Millisecond + d).Milliseconds()),
				)
			}
		}
		return StepNote{
			Say: text + "; it sends nothing meanwhile, and a lease it holds keeps running down.",
		}
	case action.Crash:
		return StepNote{
			Say: a.Client + " crashes: it never sends again; a lock it holds stays until its " +
				"lease runs out.",
		}
	case action.Run:
		return n.sayRun(i, st)
	}
	return StepNote{Say: n.name(st.Text)}
}

func (n *Narration) sayTick(i int, st action.Step) StepNote {
	text := fmt.Sprintf("Time passes to %s.", at(st.Action.At.Milliseconds()))
	for _, x := range n.s.Expired {
		if x.At != st.Action.At {
			continue
		}
		for _, k := range x.Keys {
			who := n.ownerOf(k)
			if who == "" {
				text += fmt.Sprintf(" The lease on %s runs out: Redis deletes the key.", k)
				continue
			}
			n.expired[i] = append(n.expired[i], who)
			text += fmt.Sprintf(
				" %s's lease on %s runs out: Redis deletes the key, and nobody tells %s, which "+
					"still believes it holds the lock.",
				who, k, who,
			)
		}
	}
	return StepNote{Say: text}
}

// ownerNow is who holds lock key k as Redis sees it.
func (n *Narration) ownerNow(k string) string { return n.owner[k] }

// ownerOf is who holds lock key k (as named in the steps) as Redis sees
// it, and forgets it: its lease ran out.
func (n *Narration) ownerOf(k string) string {
	for full, c := range n.owner {
		if n.short(full) == k {
			delete(n.owner, full)
			return c
		}
	}
	return ""
}

func (n *Narration) sayRun(i int, st action.Step) StepNote {
	who := st.Action.Client
	cmds := n.byStep[i]
	if len(cmds) == 0 {
		return StepNote{Say: n.name(st.Text)}
	}
	var parts []string
	refused := false
	for _, cv := range cmds {
		name := rediscmd.Name(cv.args)
		switch name {
		case "watch":
			n.watching[who] = true
			keys, _ := rediscmd.Keys(cv.args)
			for i, k := range keys {
				keys[i] = n.short(k)
			}
			parts = append(
				parts,
				fmt.Sprintf(
					"%s watches %s, so its transaction will be refused if the key changes before "+
						"it commits",
					who,
					strings.Join(keys, ", "),
				),
			)
			continue
		case "multi", "discard":
			continue
		case "unwatch":
			n.watching[who] = false
			continue
		case "exec":
			n.watching[who] = false
			if cv.value == "(nil)" || cv.err != "" {
				refused = true
			}
			continue
		}
		if strings.HasPrefix(cv.err, "NOSCRIPT") || name == "xinfo" {
			continue // the script is sent again, whole; the code's own check of a stream
		}
		if cv.err != "" {
			if strings.Contains(cv.err, "aborted") ||
				strings.Contains(cv.err, "transaction failed") {
				refused = true
				continue
			}
			parts = append(
				parts,
				fmt.Sprintf("%s failed: %s", rediscmd.Show(cv.args, n.short), cv.err),
			)
			continue
		}
		if p, ref := n.sayCommand(i, who, cv, n.watching[who]); p != "" {
			parts = append(parts, p)
			refused = refused || ref
		}
	}
	if refused &&
		!slices.ContainsFunc(
			parts,
			func(p string) bool { return strings.Contains(p, "the fence refuses") },
		) {
		parts = append(
			parts,
			fmt.Sprintf(
				"the fence refused %s's write: the lock key changed since %s checked it, so "+
					"nothing was written",
				who,
				who,
			),
		)
	}
	var reads, writes, rest []string
	for _, p := range parts {
		switch {
		case strings.HasPrefix(p, readMark):
			reads = append(reads, strings.TrimPrefix(p, readMark))
		case strings.HasPrefix(p, writeMark):
			writes = append(writes, strings.TrimPrefix(p, writeMark))
		default:
			rest = append(rest, p)
		}
	}
	parts = rest
	if len(reads) > 0 {
		n.read[who] = strings.Join(reads, ", ")
		parts = append(parts, who+" read "+n.read[who])
	}
	if len(writes) > 0 && !refused {
		n.wrote[who] = strings.Join(writes, ", ")
		parts = append(parts, who+" wrote "+n.wrote[who])
	}
	if len(parts) == 0 {
		return StepNote{Say: n.name(st.Text)}
	}
	s := strings.Join(parts, "; ")
	return StepNote{Say: strings.ToUpper(s[:1]) + s[1:] + ".", FenceRefused: refused}
}

// sayLockOp says what a command on the lock did to the lock, as package
// rediscmd reads it: a take, a failed take, an extension or a release;
// ok is false for any other operation, which sayCommand says instead.
func (n *Narration) sayLockOp(i int, who string, cv cmdView, nilReply bool) (s string, ok bool) {
	l := cv.lock
	switch l.Op {
	case rediscmd.Acquire:
		n.lastTake[who] = i
		n.took[i] = who
		n.token[who] = n.name(l.Token)
		n.fence[who] = l.Fence
		if prev := n.ownerNow(l.Key); !l.NX && prev != "" && prev != who {
			n.owner[l.Key] = who
			return fmt.Sprintf(
				"%s: a plain SET, so %s wrote its token %s over %s's: %s and %s both believe "+
					"they hold the lock",
				n.name(cv.value), who, n.name(l.Token), prev, prev, who,
			), true
		}
		free := "the lock was free"
		if strings.Contains(l.How, "GET") {
			free = "(nil): the lock was free"
		} else {
			free = n.name(cv.value) + ": the lock was free"
		}
		n.owner[l.Key] = who
		s := fmt.Sprintf("%s; %s now holds it, with token %s", free, who, n.name(l.Token))
		if l.Fence != "" {
			s += ", fence " + l.Fence
		}
		if l.TTL > 0 {
			s += fmt.Sprintf(
				", lease until %s",
				at(
					(time.Duration(n.s.Steps[i].ClockMS)*time.Millisecond +
						l.TTL).Milliseconds(),
				),
			)
		}
		return s, true
	case rediscmd.AcquireFailed:
		if strings.Contains(l.How, "GET") && !nilReply {
			return fmt.Sprintf(
				"%s: the lock is held (token %s), so %s did not get it", n.name(cv.value),
				n.name(cv.value), who,
			), true
		}
		return fmt.Sprintf(
			"%s: the lock is held, so %s did not get it", n.name(cv.value), who,
		), true
	case rediscmd.Lease:
		n.extended[i] = who
		if o := n.owner[l.Key]; o != "" && o != who {
			return fmt.Sprintf(
				"%s extended the lease on %s, but the lock is %s's", who, n.short(l.Key), o,
			), true
		}
		return fmt.Sprintf("%s extended its lease on %s", who, n.short(l.Key)), true
	case rediscmd.Delete, rediscmd.Release:
		tok := n.token[who]
		if tok == "" {
			tok = who + "'s token"
		}
		n.token[who], n.fence[who] = "", ""
		if l.Done {
			holder := n.owner[l.Key]
			delete(n.owner, l.Key)
			n.released[i] = who
			if holder != "" && holder != who {
				return fmt.Sprintf(
					"%s: %s deleted the lock key, but the lock was %s's: %s's lock is gone",
					cv.value, who, holder, holder,
				), true
			}
			if l.Op == rediscmd.Delete {
				return fmt.Sprintf(
					"%s: %s deleted the lock key: it released the lock", cv.value, who,
				), true
			}
			return fmt.Sprintf(
				"%s: the key still held %s, so it was deleted: %s released the lock", cv.value,
				tok, who,
			), true
		}
		return fmt.Sprintf(
			"%s: the key no longer holds %s (its lease ran out, or another client took the "+
				"lock), so nothing was deleted",
			cv.value,
			tok,
		), true
	}
	return "", false
}

// sayCommand is one command of a run step in words; refused is set when
// it shows a fenced write refused.
func (n *Narration) sayCommand(i int, who string, cv cmdView, fenceCheck bool) (string, bool) {
	name := rediscmd.Name(cv.args)
	key := ""
	if len(cv.args) > 1 {
		key = cv.args[1]
	}
	nilReply := cv.value == "(nil)"
	if cv.isLock {
		if s, ok := n.sayLockOp(i, who, cv, nilReply); ok {
			return s, false
		}
	}
	if name == "eval" || name == "evalsha" {
		return n.sayScript(i, who, cv), false
	}
	keys, write := rediscmd.Keys(cv.args)
	if len(keys) > 0 && n.e.Target().IsLock(keys[0]) {
		if write {
			return fmt.Sprintf(
				"%s sent %s: %s", who, rediscmd.Show(cv.args, n.short), n.name(cv.value),
			), false
		}
		switch {
		case nilReply:
			return fmt.Sprintf("(nil): %s finds the lock free", who), false
		case fenceCheck && n.token[who] != "" && n.name(cv.value) != n.token[who]:
			return fmt.Sprintf(
				"the lock holds %s, not %s's %s: the fence refuses %s's write", n.name(cv.value),
				who, n.token[who], who,
			), true
		case fenceCheck:
			return fmt.Sprintf(
				"the fence check: the lock still holds %s's token %s", who, n.name(cv.value),
			), false
		}
		return fmt.Sprintf("%s reads the lock: %s holds it", who, n.name(cv.value)), false
	}
	short := n.short(key)
	shown := strings.TrimPrefix(rediscmd.Show(cv.args, n.short), strings.ToUpper(name)+" ")
	if !write {
		if name == "type" || name == "xinfo" || name == "exists" {
			return "", false // the code's own checks of the keys' types
		}
		v := rediscmd.Clip(n.name(cv.value), 40)
		if nilReply {
			v = "(nil), so 0"
		}
		item := shown + " = " + v
		if name == "get" {
			item = short + " = " + v
		}
		n.reads = append(
			n.reads,
			access{step: i, client: who, key: short, value: valueOr0(cv.value)},
		)
		return readMark + item, false
	}
	if name == "set" && len(cv.args) > 2 {
		n.writes = append(n.writes, access{step: i, client: who, key: short, value: cv.args[2]})
		return writeMark + short + " = " + cv.args[2], false
	}
	n.writes = append(n.writes, access{step: i, client: who, key: short})
	return writeMark + strings.ToUpper(name) + " " + shown, false
}

// Marks of the reads and writes of the resource among a step's clauses:
// sayRun gathers them into one clause each.
const (
	readMark  = "\x00r"
	writeMark = "\x00w"
)

func valueOr0(v string) string {
	if v == "(nil)" {
		return "0"
	}
	return v
}

// sayScript is a script that package rediscmd does not read: a Lua lock's
// acquire, release or extend, read by the convention (1 succeeded, 0 or
// nil refused).
func (n *Narration) sayScript(i int, who string, cv cmdView) string {
	sn := scriptName(cv.args)
	keys, argv, _ := rediscmd.ScriptArgs(cv.args)
	ok := cv.value == "1"
	onLock := len(keys) > 0 && n.e.Target().IsLock(keys[0])
	switch {
	case onLock && strings.Contains(sn, "acquire") && ok:
		n.owner[keys[0]] = who
		n.lastTake[who] = i
		n.took[i] = who
		tok := ""
		if len(argv) > 0 {
			tok = n.name(argv[0])
		}
		n.token[who] = tok
		return fmt.Sprintf(
			"%s's %s answered 1: %s now holds the lock, with token %s", who, sn, who, tok,
		)
	case onLock && strings.Contains(sn, "acquire"):
		return fmt.Sprintf(
			"%s's %s answered %s: the lock is held, so %s did not get it", who, sn, cv.value, who,
		)
	case onLock && strings.Contains(sn, "release") && ok:
		holder := n.owner[keys[0]]
		delete(n.owner, keys[0])
		n.released[i] = who
		n.token[who] = ""
		if holder != "" && holder != who {
			return fmt.Sprintf(
				"%s's %s answered 1: %s released the lock, but it was %s's", who, sn, who, holder,
			)
		}
		return fmt.Sprintf("%s's %s answered 1: %s released the lock", who, sn, who)
	case onLock && strings.Contains(sn, "release"):
		n.token[who] = ""
		return fmt.Sprintf(
			"%s's %s answered %s: the lock was no longer %s's, so nothing was released", who, sn,
			cv.value, who,
		)
	case onLock && strings.Contains(sn, "extend"):
		if !ok {
			return fmt.Sprintf(
				"%s's %s answered %s: %s no longer holds the lock, so its lease was not extended",
				who, sn, cv.value, who,
			)
		}
		n.extended[i] = who
		if o := n.owner[keys[0]]; o != "" && o != who {
			return fmt.Sprintf(
				"%s's %s answered 1: %s believes its lease runs again from now, but the lock is "+
					"%s's",
				who, sn, who, o,
			)
		}
		return fmt.Sprintf("%s's %s answered 1: %s's lease runs again from now", who, sn, who)
	}
	return fmt.Sprintf("%s ran %s: it answered %s", who, sn, rediscmd.Clip(n.name(cv.value), 40))
}

// Views is each client as it stands at the end of the schedule cut.
func (n *Narration) Views() []ClientView {
	var out []ClientView
	for i, c := range n.s.Snapshot().Clients {
		v := ClientView{
			Client:       c.Name,
			LeaseUntilMS: -1,
			LeaseMS:      n.e.Model().LeaseOf(i).Milliseconds(),
			Read:         n.read[c.Name],
			Wrote:        n.wrote[c.Name],
		}
		switch {
		case c.Crashed:
			v.Status = "crashed"
		case c.Paused:
			v.Status = "paused"
			v.PausedUntilMS = -1
			if c.PausedUntil >= 0 {
				v.PausedUntilMS = c.PausedUntil.Milliseconds()
			}
		case c.Done:
			v.Status = "done"
		case c.Hold != nil:
			v.Status = "holding the lock"
		case c.Wanted || c.Steps > 0:
			v.Status = "taking the lock"
		default:
			v.Status = "not started"
		}
		if c.GaveUp && !c.Crashed && !c.Paused {
			v.Status = "gave up"
		}
		if c.Hold != nil {
			v.Believes = true
			v.Token = n.token[c.Name]
			v.Fence = n.fence[c.Name]
			if end := c.Hold.End; end >= 0 {
				v.LeaseUntilMS = end.Milliseconds()
			}
		}
		out = append(out, v)
	}
	return out
}

// Chains is the causal chain of each of vs, the schedule's violations.
func (n *Narration) Chains(vs []result.Violation) []Chain {
	out := []Chain{}
	for _, v := range vs {
		c := Chain{Property: v.Property, Step: v.Step, Links: []ChainLink{}}
		switch v.Property {
		case result.Resource:
			c.Links = n.lostUpdate(v)
		case result.MutualExclusion, result.Holders:
			c.Links = n.bothHold(v)
		}
		if len(c.Links) == 0 {
			c.Links = n.generic(v)
		}
		texts := make([]string, len(c.Links))
		for i, l := range c.Links {
			texts[i] = l.Text
		}
		c.Story = strings.Join(texts, "; ")
		out = append(out, c)
	}
	return out
}

// lostUpdate finds a write that overwrote another's with the same value:
// X read v, Y wrote v+1, X wrote v+1 over it. Its chain: who took the
// lock, whose lease ran out, the reads and the two writes.
func (n *Narration) lostUpdate(v result.Violation) []ChainLink {
	for k, late := range n.writes {
		if late.step > v.Step || late.value == "" {
			continue
		}
		for _, early := range n.writes[:k] {
			if early.client == late.client || early.key != late.key || early.value != late.value {
				continue
			}
			// late's client read before early's write.
			var r *access
			for j := range n.reads {
				x := n.reads[j]
				if x.client == late.client && x.key == late.key && x.step < early.step {
					r = &n.reads[j]
				}
			}
			if r == nil {
				continue
			}
			links := map[int]string{}
			x, y := late.client, early.client
			n.lockStory(links, x, late.step)
			n.lockStory(links, y, early.step)
			links[r.step] = fmt.Sprintf("%s read %s = %s", x, r.key, r.value)
			for _, rr := range n.reads {
				if rr.client == y && rr.key == early.key && rr.step < early.step {
					links[rr.step] = fmt.Sprintf("%s read %s = %s", y, rr.key, rr.value)
				}
			}
			links[early.step] = fmt.Sprintf("%s wrote %s = %s", y, early.key, early.value)
			links[late.step] = fmt.Sprintf(
				"%s wrote %s = %s over it: %s's update is lost", x, late.key, late.value, y,
			)
			return sorted(links)
		}
	}
	return nil
}

// lockStory adds client c's lock events up to step end to links: its
// takes, its pauses, its lease running out, its releases.
func (n *Narration) lockStory(links map[int]string, c string, end int) {
	for i, st := range n.s.Steps {
		if i > end {
			break
		}
		switch {
		case n.took[i] == c:
			links[i] = c + " took the lock"
		case slices.Contains(n.expired[i], c):
			links[i] = c + "'s lease ran out (" + c + " still believes it holds the lock)"
		case st.Action.Kind == action.Pause && st.Action.Client == c:
			links[i] = c + " paused"
		case n.released[i] == c:
			links[i] = c + " released the lock"
		case n.extended[i] == c:
			links[i] = strings.TrimSuffix(n.Notes[i].Say, ".")
		}
	}
}

// bothHold is the chain of a broken mutual exclusion: each client's take
// of the lock, and leases that ran out on the way.
func (n *Narration) bothHold(v result.Violation) []ChainLink {
	links := map[int]string{}
	var who []string
	for _, c := range n.s.Clients {
		if strings.Contains(v.Message, c+" (") || strings.Contains(v.Message, " "+c+" ") {
			who = append(who, c)
		}
	}
	for _, c := range who {
		n.lockStory(links, c, v.Step)
		for i, st := range n.s.Steps {
			if i <= v.Step && st.Action.Client == c && st.Action.Kind == action.Run &&
				strings.Contains(n.Notes[i].Say, "finds the lock free") {
				links[i] = c + " found the lock free"
			}
		}
	}
	if v.Step >= 0 && v.Step < len(n.s.Steps) {
		if _, ok := links[v.Step]; !ok {
			links[v.Step] = n.Notes[v.Step].Say
		}
		at := ": two clients hold the lock at once"
		if v.Property == result.Holders {
			at = ": more clients hold the semaphore than it has permits"
		}
		links[v.Step] = strings.TrimSuffix(links[v.Step], ".") + at
	}
	return sorted(links)
}

// generic is the chain of another violation: the lock's events of every
// client up to the step, and the writes.
func (n *Narration) generic(v result.Violation) []ChainLink {
	links := map[int]string{}
	for _, c := range n.s.Clients {
		n.lockStory(links, c, v.Step)
	}
	for _, w := range n.writes {
		if w.step <= v.Step {
			links[w.step] = n.Notes[w.step].Say
		}
	}
	if v.Step >= 0 && v.Step < len(n.Notes) {
		links[v.Step] = strings.TrimSuffix(
			n.Notes[v.Step].Say,
			".",
		) + ": " + v.Property + " broke here"
	}
	return sorted(links)
}

func sorted(links map[int]string) []ChainLink {
	out := make([]ChainLink, 0, len(links))
	for i, t := range links {
		out = append(out, ChainLink{Step: i, Text: t})
	}
	slices.SortFunc(out, func(a, b ChainLink) int { return a.Step - b.Step })
	return out
}
