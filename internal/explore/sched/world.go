package sched

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/goroutine"
	"github.com/lockmarket/lockmarket/internal/explore/plumbing"
	"github.com/lockmarket/lockmarket/internal/explore/search"
	"github.com/lockmarket/lockmarket/internal/redis/rediscmd"
	"github.com/lockmarket/lockmarket/locking"
	"github.com/redis/go-redis/v9"
)

// errStopped is what a client's command or sleep returns once the client
// crashed or the schedule ended. It wraps redis.ErrClosed: nothing was
// sent, so a lock does not start a background release of an attempt
// whose reply it believes lost.
var errStopped = fmt.Errorf("explore: client stopped: %w", redis.ErrClosed)

// errNoSchedule is returned for a command sent through a client's
// go-redis client while no schedule runs: nothing can order it.
var errNoSchedule = errors.New("explore: command sent while no schedule runs")

// ErrOutside ends a search in which a client sent a command the explorer
// cannot hold: from a goroutine that descends from no client's (one
// started before the schedule, or a worker fed by a channel), which it
// cannot wait for. A goroutine a client starts, however deep in a
// library, is the client's (ancestry.go). The error names the client,
// the command and the fix.
var ErrOutside = errors.New("explore: a command the explorer cannot hold")

// ErrStuck is returned when a client neither sent a command, slept on its
// clock, nor finished within Options.StuckAfter of real time, without waiting on
// the wall clock (ErrWallClock): it is busy, or blocked in a system call.
// The error says where each goroutine of the clients stands.
var ErrStuck = errors.New("explore: a client blocked outside the scheduler's view")

// defaultStuckAfter is Options.StuckAfter's default.
const defaultStuckAfter = 10 * time.Second

func (s *slot) set(c *clientState) {
	s.mu.Lock()
	s.c = c
	s.mu.Unlock()
}

func (s *slot) get() *clientState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.c
}

// track counts the calling goroutine as c's goroutine number n: the
// scheduler waits for it, and holds its commands.
func (w *world) track(c *clientState, n int) {
	id := goroutine.ID()
	w.mu.Lock()
	w.goroutines[id] = gref{c: c, n: n}
	w.mu.Unlock()
}

// note adds an entry about goroutine g to c's log. w.mu is held.
func (w *world) note(c *clientState, g int, s string) {
	c.log = append(c.log, logEntry{g: g, s: s})
}

// fail ends the schedule with err (the first one given wins). w.mu is
// held.
func (w *world) fail(err error) {
	if w.fatal == nil {
		w.fatal = err
	}
}

// fatalErr is the error that ends the schedule, if any.
func (w *world) fatalErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fatal
}

// NewID is the n-th value of kind the explorer makes for client c in
// this schedule, shaped as a UUID (as the tokens of most locks are): the
// same in every run of the schedule, and unlike any other client's or
// kind's.
func (w *world) NewID(c *clientState, kind string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := c.Name + " " + kind
	n := w.ids[k]
	w.ids[k] = n + 1
	return formatID(c.Index, kind, n)
}

// formatID is the n-th value (from 0) of kind made for client i.
func formatID(i int, kind string, n int) string {
	tag := 0
	if kind == IDCall {
		tag = 1
	}
	return fmt.Sprintf("%08x-0000-4000-8%03x-%012x", i+1, tag, n+1)
}

// The kinds of value the explorer makes (world.NewID): a lock's token and
// a call's ID.
const (
	IDToken = "token"
	IDCall  = "call"
)

// poke tells the scheduler that something changed.
func (w *world) poke() {
	select {
	case w.signal <- struct{}{}:
	default:
	}
}

// Clock is a client's view of the virtual clock (locking.Clock).
type Clock struct{ c *clientState }

// Now is the time on the clients' clock: the virtual time, dilated
// (world.At).
func (k Clock) Now() time.Time {
	w := k.c.world
	id := goroutine.WhoAmI()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.note(k.c, w.gnum(id), "now "+strconv.FormatInt(int64(w.Now), 10))
	return w.At(w.Now)
}

// Sleep waits for d on the clients' clock (d/Dilation of virtual time),
// or until ctx ends: the scheduler decides when the clock gets there.
func (k Clock) Sleep(ctx context.Context, d time.Duration) error {
	w := k.c.world
	id := goroutine.WhoAmI()
	w.mu.Lock()
	if w.stopping || k.c.crashed {
		w.mu.Unlock()
		if err := ctx.Err(); err != nil {
			return err
		}
		return errStopped
	}
	s := &sleeper{c: k.c, g: w.gnum(id), ctx: ctx, deadline: -1, ch: make(chan error, 1)}
	s.counted = w.counted(id.ID)
	if d < locking.Forever/2 {
		// d is on the clients' dilated clock.
		v := w.Undilate(max(d, 0))
		if w.sleepAs > 0 && d > 0 {
			v = w.sleepAs
		}
		s.deadline = w.Now + v
	}
	w.note(k.c, s.g, "sleep "+strconv.FormatInt(int64(s.deadline), 10))
	if err := ctx.Err(); err != nil {
		// Logged as a sleep its context's end cut short: whether the
		// context ended just before the sleep began or just after
		// depends on real time, not on the schedule.
		w.note(k.c, s.g, "woke: "+err.Error())
		w.mu.Unlock()
		return err
	}
	w.sleepers = append(w.sleepers, s)
	if s.counted {
		w.running--
	}
	w.mu.Unlock()
	s.stop = context.AfterFunc(ctx, func() {
		w.mu.Lock()
		w.wake(s, ctx.Err())
		w.mu.Unlock()
		w.poke()
	})
	w.poke()
	w.reached()
	err := <-s.ch
	s.stop()
	return err
}

// AwaitStart waits until the scheduler lets the client begin its next
// critical section (a Start action): a client may begin at any moment of
// the schedule, after any other client's step or advance of the clock.
func (k Clock) AwaitStart(ctx context.Context) error {
	w := k.c.world
	id := goroutine.WhoAmI()
	w.mu.Lock()
	if w.stopping || k.c.crashed {
		w.mu.Unlock()
		return errStopped
	}
	s := &sleeper{
		c:        k.c,
		g:        w.gnum(id),
		ctx:      ctx,
		deadline: -1,
		start:    true,
		ch:       make(chan error, 1),
	}
	s.counted = w.counted(id.ID)
	w.note(k.c, s.g, "await start")
	w.sleepers = append(w.sleepers, s)
	if s.counted {
		w.running--
	}
	w.mu.Unlock()
	w.poke()
	w.reached()
	return <-s.ch
}

// Go runs f in a goroutine of the client that the scheduler waits for.
func (k Clock) Go(f func()) {
	w := k.c.world
	id := goroutine.WhoAmI()
	w.mu.Lock()
	n := k.c.spawned
	k.c.spawned++
	w.note(k.c, w.gnum(id), "go "+strconv.Itoa(n))
	w.running++
	w.live++
	w.mu.Unlock()
	go func() {
		defer w.exit()
		w.track(k.c, n)
		f()
	}()
}

// wake ends s's sleep with err (nil: its time came). w.mu is held.
func (w *world) wake(s *sleeper, err error) {
	if s.woken {
		return
	}
	s.woken = true
	woke := "woke"
	if err != nil {
		woke += ": " + err.Error()
	}
	w.note(s.c, s.g, woke)
	if s.counted {
		w.running++
	}
	if i := slices.Index(w.sleepers, s); i >= 0 {
		w.sleepers = slices.Delete(w.sleepers, i, i+1)
	}
	w.deliver(s.ch, err)
}

func (w *world) exit() {
	w.mu.Lock()
	w.running--
	w.live--
	w.mu.Unlock()
	w.poke()
	w.reached()
}

// gate parks a command for node ("" for the one server) until the
// scheduler releases it.
func (w *world) gate(c *clientState, node string, cmds []redis.Cmder) (*parked, error) {
	id := goroutine.WhoAmI()
	w.mu.Lock()
	if w.stopping || c.crashed {
		w.mu.Unlock()
		return nil, errStopped
	}
	g := w.gnum(id)
	if g < 0 {
		err := fmt.Errorf(
			"%w: client %s sent %s from a goroutine that descends from no client's (started "+
				"before the schedule, or a worker fed by a channel): the explorer cannot wait "+
				"for it, nor order what it sends. Send from the client's own goroutine or from "+
				"one it starts, however deep in a library",
			ErrOutside, c.Name, w.Target.describe(cmds),
		)
		w.fail(err)
		w.mu.Unlock()
		w.poke()
		return nil, err
	}
	if c.freePass {
		c.freePass = false
		w.mu.Unlock()
		return nil, nil
	}
	w.seq++
	c.sentAt = w.Now
	if w.Target.Traits.declared {
		// A lease the client then says it holds counts from here: two
		// states that differ in it must not look alike (fingerprint).
		w.note(c, g, "sent at "+strconv.FormatInt(int64(w.Now), 10))
	}
	p := &parked{c: c, seq: w.seq, cmds: cmds, g: g, go_: make(chan error, 1), since: w.Now}
	p.counted = w.counted(id.ID)
	p.args = plumbing.Args(cmds)
	p.keys, p.write = plumbing.FootprintOf(p.args)
	p.written = plumbing.WrittenOf(p.args)
	for _, k := range p.keys {
		if w.Target.IsLock(k) {
			p.lock = true
		}
	}
	p.desc = w.Target.describeArgs(p.args)
	if node != "" {
		p.node, p.keys, p.desc = node, plumbing.OnNode(node, p.keys), node+" "+p.desc
		p.written = plumbing.OnNode(node, p.written)
	}
	w.parked = append(w.parked, p)
	if p.counted {
		w.running--
	}
	w.mu.Unlock()
	w.poke()
	w.reached()
	return p, <-p.go_
}

// after records a released command's outcome; sent is when it was sent.
// args is cmds' arguments as text when the gate wrote them already (nil:
// written here).
func (w *world) after(p *parked, cmds []redis.Cmder, args [][]string, err error, sent time.Time) {
	if args == nil {
		args = plumbing.Args(cmds)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	rec := CmdRecord{
		Step:   w.StepIndex,
		at:     w.Now,
		Args:   make([][]string, 0, len(cmds)),
		Values: make([]string, 0, len(cmds)),
		Errs:   make([]string, 0, len(cmds)),
	}
	if p != nil {
		rec.Client = p.c.Name
		if w.Target.Traits.declared && p.c.endHold {
			p.c.holding, p.c.endHold = nil, false // Client.Released: the release's first command ran
		}
	}
	replies := make([]string, 0, len(cmds))
	for i, c := range cmds {
		rec.Args = append(rec.Args, args[i])
		// A pipeline's error is its first failed command's, which
		// go-redis also sets on that command: the others keep their own.
		cerr := err
		if len(cmds) > 1 {
			cerr = nil
		}
		v, e := plumbing.ReplyOf(c, cerr)
		if p != nil && w.Target.Traits.InferHolds {
			w.inferHold(p.c, rec.Args[len(rec.Args)-1], v, e)
		}
		// A reply is kept bounded (a script may make it megabytes); one
		// cut keeps a digest of the whole, so that two states that differ
		// past the cut still differ (logCommand).
		bv, be := rediscmd.Bound(v, plumbing.MaxReplyBytes), rediscmd.Bound(e, plumbing.MaxReplyBytes)
		if bv != v || be != e {
			if rec.whole == nil {
				rec.whole = make([]string, len(cmds))
			}
			sum := sha256.Sum256([]byte(v + "|" + e))
			rec.whole[len(rec.Values)] = hex.EncodeToString(sum[:8])
		}
		v, e = bv, be
		rec.Values = append(rec.Values, v)
		rec.Errs = append(rec.Errs, e)
		if e != "" {
			replies = append(replies, "error: "+e)
		} else {
			replies = append(replies, v)
		}
	}
	w.CmdLog = append(w.CmdLog, rec)
	if p != nil {
		w.logCommand(p, rec)
	}
	if p != nil && p.write && w.bubble == nil {
		// In a bubble this goroutine's clock is the bubble's: the
		// scheduler notes the window instead (Explorer.apply).
		win := window{sent: sent, replied: time.Now()}
		for _, k := range p.keys {
			if k != "*" {
				w.written[k] = win
			}
		}
	}
	if p != nil {
		p.reply = w.Target.Short(strings.Join(replies, ", "))
		p.c.last = p.desc + " → " + p.reply
	}
	if len(cmds) == 1 && strings.EqualFold(cmds[0].Name(), "evalsha") && err != nil &&
		strings.HasPrefix(err.Error(), "NOSCRIPT") {
		if c := p.c; c != nil {
			c.freePass = true
		}
		w.missedScript = true
	}
}

// Hold is the slot's half of the hook (hook.go): it waits for cmds' turn
// under the client of the current schedule, and returns what to call with
// their outcome once sent; a nil client gets errNoSchedule.
func (s *slot) Hold(node string, cmds []redis.Cmder) (func(err error, sent time.Time), error) {
	c := s.get()
	if c == nil {
		return nil, errNoSchedule
	}
	w := c.world
	p, err := w.gate(c, node, cmds)
	if err != nil {
		return nil, err
	}
	var args [][]string
	if p == nil { // a free pass: record it under the command it follows
		w.mu.Lock()
		p = w.lastRun
		w.mu.Unlock()
	} else {
		args = p.args
	}
	return func(err error, sent time.Time) { w.after(p, cmds, args, err, sent) }, nil
}

// inferHold follows what client c holds, for a target whose lock is
// taken inside code the explorer runs unchanged (the market), from one
// command on a lock key and its reply: a SET NX with a lease that
// succeeded holds the key until the lease ends on the virtual clock; the
// client's next script on that key, its release, ends the hold. w.mu is
// held.
func (w *world) inferHold(c *clientState, args []string, value, errText string) {
	l, ok := rediscmd.ReadLock(args, value, errText, w.Target.IsLock)
	if ok && l.Op == rediscmd.Acquire && l.NX && strings.HasPrefix(l.How, "SET ") && l.TTL > 0 {
		end := w.Now + w.Undilate(l.TTL) // the server's lease is dilated
		c.holding = &hold{Write: true, Key: l.Key, End: func() time.Duration { return end }}
		c.got++
		return
	}
	name := rediscmd.Name(args)
	if errText != "" || name != "eval" && name != "evalsha" {
		return
	}
	if keys, _, ok := rediscmd.ScriptArgs(args); ok && len(keys) > 0 && c.holding != nil &&
		c.holding.Key == keys[0] {
		c.holding = nil
	}
}

// replaceTokens returns text with each token replaced by a name that is the
// same in every run of a schedule: the client that first sent it and a
// number. A token first seen in a reply (sent false) keeps its text.
// w.mu is held.
func (w *world) replaceTokens(c *clientState, text string, sent bool) string {
	return replaceEach(text, tokenAt, func(tok string) string {
		if name, ok := w.tokens[tok]; ok {
			return name
		}
		if !sent {
			return tok
		}
		n := 0
		for _, name := range w.tokens {
			if strings.HasPrefix(name, "<"+c.Name+"#") {
				n++
			}
		}
		name := fmt.Sprintf("<%s#%d>", c.Name, n)
		w.tokens[tok] = name
		return name
	})
}

// coarse is a reply with each large integer rounded to a multiple of the
// dilation: a lease's time left, read on the server, is its virtual time
// left dilated, less the real time that ran it down since the clock last
// advanced; that real time (a second of it is a microsecond of virtual
// time) must not tell two states apart. Undilated, text is left as it
// is.
func (w *world) coarse(text string) string {
	f := w.Factor
	if f <= 1 {
		return text
	}
	// The integers of a reply that may count a lease's time left on the
	// server (a PTTL or TTL in a script's reply, dilated): bigNumberAt.
	return replaceEach(text, bigNumberAt, func(n string) string {
		v, err := strconv.ParseInt(n, 10, 64)
		if err != nil {
			return n
		}
		return "~" + strconv.FormatInt((v+f/2)/f, 10) + "e6"
	})
}

// logCommand adds a released command and its reply to its client's log and,
// for a write or a WATCH, to the log of each key it touches, with the
// virtual time (a lease's end depends on it). w.mu is held.
func (w *world) logCommand(p *parked, rec CmdRecord) {
	c := p.c
	var parts []string
	ordered := p.write
	for i, args := range rec.Args {
		a := w.replaceTokens(c, strings.Join(args, " "), true)
		reply := rec.Values[i] + "|" + rec.Errs[i]
		if rec.whole != nil && rec.whole[i] != "" {
			reply += "|" + rec.whole[i]
		}
		parts = append(parts, a+" -> "+w.coarse(w.replaceTokens(c, reply, false)))
		if strings.EqualFold(args[0], "watch") {
			ordered = true
		}
	}
	entry := strings.Join(parts, "; ")
	w.note(c, p.g, entry)
	if p.node == "" {
		w.noteWatches(c, rec.Args)
	}
	if !ordered {
		return
	}
	// One line, shared by the logs of every key the command writes or
	// WATCHes: a key it only reads is not changed by it (what the read
	// saw is in the client's log).
	line := c.Name + " " + strconv.FormatInt(int64(w.Now), 10) + " " + entry
	for _, k := range p.keys {
		if k == "*" {
			w.opaque = true
			continue
		}
		if slices.Contains(p.written, k) || watches(rec.Args, k, p.node) {
			w.keyLog[k] = append(w.keyLog[k], line)
		}
	}
}

// fingerprint names the state of the schedule after depth steps, ticks
// advances and faults faults: two schedules with one fingerprint go on
// alike, whatever comes next. The state is:
//   - each client's log (replies, readings of the clock, ends of sleeps;
//     its code is deterministic) and where it stands (paused, crashed,
//     what it holds, what it waits for);
//   - the virtual time;
//   - for each key, the writes it saw, in order, each with its client,
//     arguments, reply and virtual time.
//
// Two runs that agree on all of these wrote every key alike, in the same
// order relative to every other access that could see the difference, so
// the server holds the same data with the same leases. Reads are not in
// the keys' logs: what a read saw is in its client's log. The namespace
// is left out (every worker has its own). ok is false when a command
// touched keys it does not name. w.mu is held.
func (w *world) fingerprint(depth, ticks, faults int) (key search.Fingerprint, ok bool) {
	st, ok := w.state(depth, ticks, faults)
	if !ok {
		return key, false
	}
	return st.hash(), true
}

// stateText is the text of a state (fingerprint), each client's part
// apart so that the clients can be renamed (symmetry.go): a client's name
// is written between the marks \x01 and \x02. Each key's part (its log)
// is apart too, in the order of the keys' names, which a renaming may
// change (a key named after a client).
type stateText struct {
	head    string
	clients []clientText
	rest    string
	keys    []string
}

type clientText struct{ name, text string }

// state is the text of the state fingerprint names. w.mu is held.
func (w *world) state(depth, ticks, faults int) (st stateText, ok bool) {
	if w.opaque {
		return st, false
	}
	st.head = fmt.Sprintf("%d %d %d %d\n", depth, ticks, faults, w.Now)
	var b strings.Builder
	for _, c := range w.Clients {
		b.Reset()
		hold := "-"
		if c.holding != nil {
			hold = fmt.Sprintf("%s %v %d", w.Target.Short(c.holding.Key), c.holding.Write, c.holding.End())
		}
		fmt.Fprintf(
			&b, "\x01%s\x02 %v %d %v %v %s %v %d %v %v %v %d %d %d %v\n", c.Name, c.paused,
			c.pausedUntil, c.crashed, c.freePass, hold, c.endHold, c.got, c.wanted, c.gaveUp,
			c.done, c.completed, c.pauses, c.Steps, c.failure != nil,
		)
		log := slices.Clone(c.log)
		sort.SliceStable(log, func(i, j int) bool { return log[i].g < log[j].g })
		for _, l := range log {
			fmt.Fprintf(&b, "%d %s\n", l.g, w.Target.Short(l.s))
		}
		var waits []string
		for _, p := range w.parked {
			if p.c == c {
				wait := "parked " + p.desc
				if w.maxDelay > 0 {
					wait += " since " + strconv.FormatInt(int64(p.since), 10)
				}
				waits = append(waits, wait)
			}
		}
		for _, s := range w.sleepers {
			if s.c == c {
				waits = append(waits, fmt.Sprintf("sleeper %v %d", s.start, s.deadline))
			}
		}
		sort.Strings(waits)
		b.WriteString(strings.Join(waits, "\n"))
		b.WriteByte('\n')
		st.clients = append(st.clients, clientText{name: c.Name, text: b.String()})
	}
	b.Reset()
	fmt.Fprintf(&b, "torn %q\n", w.torn)
	dirty := make([]string, 0, len(w.nodeDirty))
	for n := range w.nodeDirty {
		dirty = append(dirty, n)
	}
	sort.Strings(dirty)
	fmt.Fprintf(&b, "nodes written %q, struck %q\n", dirty, w.nodeFalls)
	b.WriteString(w.owedText())
	keys := make([]string, 0, len(w.keyLog))
	for k := range w.keyLog {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	st.rest = b.String()
	for _, k := range keys {
		b.Reset()
		fmt.Fprintf(&b, "key %s\n", w.Target.Short(k))
		for _, l := range w.keyLog[k] {
			// Each line begins with its client's name.
			who, rest, _ := strings.Cut(l, " ")
			fmt.Fprintf(&b, "\x01%s\x02 %s\n", who, w.Target.Short(rest))
		}
		st.keys = append(st.keys, b.String())
	}
	return st, true
}

// hash is the fingerprint of the state: of its text, the clients' parts
// in order.
func (st stateText) hash() search.Fingerprint {
	n := len(st.head) + len(st.rest)
	for _, c := range st.clients {
		n += len(c.text)
	}
	for _, k := range st.keys {
		n += len(k)
	}
	buf := make([]byte, 0, n)
	buf = append(buf, st.head...)
	for _, c := range st.clients {
		buf = append(buf, c.text...)
	}
	buf = append(buf, st.rest...)
	for _, k := range st.keys {
		buf = append(buf, k...)
	}
	return sha256.Sum256(buf)
}

// Elapsed is the virtual time since the epoch.
func (k Clock) Elapsed() time.Duration {
	w := k.c.world
	id := goroutine.WhoAmI()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.note(k.c, w.gnum(id), "now "+strconv.FormatInt(int64(w.Now), 10))
	return w.Now
}

// watches reports whether a WATCH among the commands args (sent to node,
// "" for the one server) names key k (as the step's keys name it).
func watches(args [][]string, k, node string) bool {
	for _, a := range args {
		if rediscmd.Name(a) != "watch" {
			continue
		}
		ks := a[1:]
		if node != "" {
			ks = plumbing.OnNode(node, ks)
		}
		if slices.Contains(ks, k) {
			return true
		}
	}
	return false
}

// shorts is keys without the namespace (Target.Short), nil for none.
func (w *world) shorts(keys []string) []string {
	if len(keys) == 0 {
		return nil
	}
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = w.Target.Short(k)
	}
	return out
}
