// Package timeline records what each client of a demonstration did and
// when, from the run itself: the Redis commands a client sent and their
// replies (through a go-redis hook, Hook), and the steps the demonstration
// knows of (a pause, a crash, the answer an operation gave, the checker's
// findings). Finish then reads the lock commands for what they mean
// (taking a lock, its lease, a release, a commit, a commit refused) and
// marks the steps that broke mutual exclusion, and the result renders as
// text columns (Text) or SVG swimlanes (SVG), one lane per client.
//
// A client is named by the context its commands run with (Recorder.As);
// commands sent with a context that names no client are not recorded, so
// a scenario's set-up and its checks stay out of the timeline.
package timeline

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lockmarket/lockmarket/internal/redis/rediscmd"
	"github.com/lockmarket/lockmarket/internal/report/latency"
)

// Kind says what an Event is.
type Kind string

// The kinds of events. Command and Reply are recorded by Hook; Acquire,
// AcquireFailed, Release, LeaseStart, LeaseExpired (when known from the
// lease's TTL), Commit and CommitRefused are read from them by Finish;
// the others are recorded by the demonstration.
const (
	// Command is a command sent to Redis (Args holds it).
	Command Kind = "command"
	// Reply is the reply to the command whose Seq is Ref.
	Reply Kind = "reply"
	// Acquire is a lock taken (Key is the lock).
	Acquire Kind = "acquire"
	// AcquireFailed is an attempt to take a lock that someone holds.
	AcquireFailed Kind = "acquire_failed"
	// Release is a lock given back, or deleted.
	Release Kind = "release"
	// LeaseStart is a lock's lease set or renewed.
	LeaseStart Kind = "lease_start"
	// LeaseExpired is a lease that ran out.
	LeaseExpired Kind = "lease_expired"
	// PauseStart and PauseEnd bracket a client's pause.
	PauseStart Kind = "pause_start"
	PauseEnd   Kind = "pause_end"
	// Crash is a client that stopped for good.
	Crash Kind = "crash"
	// Commit is a write of market data applied (an EXEC, or a script).
	Commit Kind = "commit"
	// CommitRefused is a commit Redis did not apply (an EXEC aborted by a
	// WATCH, a script that refused).
	CommitRefused Kind = "commit_refused"
	// Result is the answer an operation gave its caller.
	Result Kind = "result"
	// Finding is what a checker found at the end.
	Finding Kind = "finding"
)

// Checker is the client name of findings.
const Checker = "checker"

// Event is one step of one client.
type Event struct {
	// Seq numbers the events of a timeline in order, from 1.
	Seq int
	// Client is who acted (a lane), or Checker.
	Client string
	// At is the time since the recording started.
	At time.Duration
	// Kind is what happened.
	Kind Kind
	// Detail says it in words (keys without the market's prefix).
	Detail string
	// Key is the lock an acquire, release or lease event is about.
	Key string
	// Violation, when not empty, says why this step broke what the lock
	// is for (two holders, a deleted lock, a commit without the lock, a
	// checker's finding).
	Violation string
	// Verbose marks the events a step-by-step reading can skip: commands
	// and replies on anything but a lock.
	Verbose bool
	// Ref is, for a Reply, the Seq of its Command.
	Ref int
	// Batch groups the commands sent in one pipeline or MULTI/EXEC; 0
	// for a command sent alone.
	Batch int
	// Args is a Command's name and arguments, as sent.
	Args []string
	// Value is a Reply's value as text, "(nil)" for a nil reply.
	Value string
	// Err is a Reply's error, if any.
	Err string
}

// eventJSON is an Event as JSON: snake_case, the time in milliseconds.
type eventJSON struct {
	Seq       int      `json:"seq"`
	Client    string   `json:"client"`
	AtMS      float64  `json:"at_ms"`
	Kind      Kind     `json:"kind"`
	Detail    string   `json:"detail"`
	Key       string   `json:"key,omitempty"`
	Violation string   `json:"violation,omitempty"`
	Verbose   bool     `json:"verbose,omitempty"`
	Ref       int      `json:"ref,omitempty"`
	Batch     int      `json:"batch,omitempty"`
	Args      []string `json:"args,omitempty"`
	Value     string   `json:"value,omitempty"`
	Err       string   `json:"err,omitempty"`
}

// MarshalJSON writes the event with snake_case keys and at_ms.
func (e Event) MarshalJSON() ([]byte, error) {
	return json.Marshal(eventJSON{e.Seq, e.Client, latency.Milliseconds(e.At), e.Kind, e.Detail, e.Key,
		e.Violation, e.Verbose, e.Ref, e.Batch, e.Args, e.Value, e.Err})
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (e *Event) UnmarshalJSON(b []byte) error {
	var j eventJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*e = Event{j.Seq, j.Client, time.Duration(j.AtMS * float64(time.Millisecond)), j.Kind, j.Detail, j.Key,
		j.Violation, j.Verbose, j.Ref, j.Batch, j.Args, j.Value, j.Err}
	return nil
}

// Timeline is a finished recording.
type Timeline struct {
	// Title names the scenario; Variant says which run of it ("flawed",
	// "fixed", a strategy).
	Title   string `json:"title"`
	Variant string `json:"variant"`
	// Clients are the lanes, in order.
	Clients []string `json:"clients"`
	// Events are every step, in order of time.
	Events []Event `json:"events"`
	// End is when the recording ended.
	End time.Duration `json:"-"`
	// Verdict says in words what the run showed.
	Verdict string `json:"verdict"`
	// Violations is what the checkers counted.
	Violations int `json:"violations"`
}

type timelineJSON struct {
	Title      string   `json:"title"`
	Variant    string   `json:"variant"`
	Clients    []string `json:"clients"`
	Events     []Event  `json:"events"`
	EndMS      float64  `json:"end_ms"`
	Verdict    string   `json:"verdict"`
	Violations int      `json:"violations"`
}

// MarshalJSON writes the timeline with end_ms.
func (t Timeline) MarshalJSON() ([]byte, error) {
	ev := t.Events
	if ev == nil {
		ev = []Event{}
	}
	return json.Marshal(timelineJSON{t.Title, t.Variant, t.Clients, ev, latency.Milliseconds(t.End), t.Verdict, t.Violations})
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (t *Timeline) UnmarshalJSON(b []byte) error {
	var j timelineJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*t = Timeline{j.Title, j.Variant, j.Clients, j.Events, time.Duration(j.EndMS * float64(time.Millisecond)), j.Verdict, j.Violations}
	return nil
}

// Marked returns the events with a Violation, in order.
func (t Timeline) Marked() []Event {
	var out []Event
	for _, e := range t.Events {
		if e.Violation != "" {
			out = append(out, e)
		}
	}
	return out
}

// Recorder collects the events of one run. It is safe for concurrent use.
type Recorder struct {
	prefix string

	mu     sync.Mutex
	start  time.Time
	seq    int
	batch  int
	events []Event
	lanes  []string
}

// NewRecorder starts a recording now. prefix is the market's key prefix
// ("{name}:"): it is left out of the keys shown, and a key under
// prefix+"lock:" is a lock.
func NewRecorder(prefix string) *Recorder { return NewRecorderAt(prefix, time.Now()) }

// NewRecorderAt is NewRecorder for a recording that started at start,
// e.g. in another process that records part of the same run.
func NewRecorderAt(prefix string, start time.Time) *Recorder {
	return &Recorder{prefix: prefix, start: start}
}

// Start is when the recording started.
func (r *Recorder) Start() time.Time { return r.start }

// Lanes fixes the order of the first lanes (others follow in order of
// their first event).
func (r *Recorder) Lanes(clients ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lanes = append(r.lanes, clients...)
}

type ctxKey struct{}

type tag struct {
	r      *Recorder
	client string
}

// As returns ctx naming client as the one acting: Hook records the
// commands sent with it into r.
func (r *Recorder) As(ctx context.Context, client string) context.Context {
	return context.WithValue(ctx, ctxKey{}, tag{r, client})
}

// Quiet returns ctx naming no client: commands sent with it are not
// recorded (a demonstration's own moves, such as making a lease run out).
func Quiet(ctx context.Context) context.Context {
	return context.WithValue(ctx, ctxKey{}, tag{})
}

// From returns the recorder and client that ctx names, if any.
func From(ctx context.Context) (*Recorder, string, bool) {
	t, ok := ctx.Value(ctxKey{}).(tag)
	if !ok || t.r == nil {
		return nil, "", false
	}
	return t.r, t.client, true
}

// Add records an event of client now and returns it.
func (r *Recorder) Add(client string, kind Kind, format string, args ...any) Event {
	return r.add(Event{Client: client, Kind: kind, Detail: fmt.Sprintf(format, args...)})
}

// AddViolation records an event of client that broke what the lock is
// for, saying why.
func (r *Recorder) AddViolation(client string, kind Kind, violation, format string, args ...any) Event {
	return r.add(Event{Client: client, Kind: kind, Detail: fmt.Sprintf(format, args...), Violation: violation})
}

// Finding records what a checker found; a violation when bad.
func (r *Recorder) Finding(bad bool, format string, args ...any) Event {
	e := Event{Client: Checker, Kind: Finding, Detail: fmt.Sprintf(format, args...)}
	if bad {
		e.Violation = "found by the checker"
	}
	return r.add(e)
}

// LeaseExpired records that the lease on a lock key ran out (as observed,
// or as made to), on the lane of whoever took it last.
func (r *Recorder) LeaseExpired(key, format string, args ...any) Event {
	return r.add(Event{Kind: LeaseExpired, Key: key, Detail: fmt.Sprintf(format, args...)})
}

func (r *Recorder) add(e Event) Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	e.Seq = r.seq
	e.At = time.Since(r.start)
	r.events = append(r.events, e)
	return e
}

// commands records commands sent together; the returned function records
// their replies.
func (r *Recorder) commands(client string, cmds []cmdView) func([]cmdView) {
	r.mu.Lock()
	batch := 0
	if len(cmds) > 1 {
		r.batch++
		batch = r.batch
	}
	at := time.Since(r.start)
	seqs := make([]int, len(cmds))
	for i, c := range cmds {
		r.seq++
		seqs[i] = r.seq
		r.events = append(r.events, Event{Seq: r.seq, Client: client, At: at, Kind: Command, Batch: batch,
			Args: c.args, Detail: r.show(c.args)})
	}
	r.mu.Unlock()
	return func(replies []cmdView) {
		r.mu.Lock()
		defer r.mu.Unlock()
		at := time.Since(r.start)
		for i, c := range replies {
			r.seq++
			r.events = append(r.events, Event{Seq: r.seq, Client: client, At: at, Kind: Reply, Batch: batch,
				Ref: seqs[i], Value: c.value, Err: c.err, Detail: r.replyText(c)})
		}
	}
}

// Raw returns the events recorded so far, as recorded (for merging into
// another process's recorder).
func (r *Recorder) Raw() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// Merge adds events recorded by another recorder of the same run (their
// At counted from the same start). Their Seq and Ref are renumbered.
func (r *Recorder) Merge(events []Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	renum := map[int]int{}
	base := r.batch
	maxBatch := 0
	for _, e := range events {
		r.seq++
		renum[e.Seq] = r.seq
		e.Seq = r.seq
		if e.Ref != 0 {
			e.Ref = renum[e.Ref]
		}
		if e.Batch != 0 {
			maxBatch = max(maxBatch, e.Batch)
			e.Batch += base
		}
		r.events = append(r.events, e)
	}
	r.batch += maxBatch
}

// show renders a command's arguments for reading (rediscmd.Show): keys
// without the market's prefix, tokens shortened, scripts by their name.
func (r *Recorder) show(args []string) string {
	return rediscmd.Show(args, func(a string) string { return strings.TrimPrefix(a, r.prefix) })
}

func (r *Recorder) shortArg(a string) string {
	a = strings.TrimPrefix(a, r.prefix)
	if rediscmd.LooksLikeToken(a) {
		return clip(a, 8)
	}
	return clip(a, 40)
}

func clip(s string, n int) string { return rediscmd.Clip(s, n) }

func (r *Recorder) replyText(c cmdView) string {
	if c.err != "" {
		return "error: " + strings.ReplaceAll(c.err, r.prefix, "")
	}
	return r.shortArg(c.value)
}

// Finish ends the recording and reads it: the lock commands become
// acquire, release and lease events, market writes become commits, leases
// that ran out by their TTL get their expiry, and unsafe steps are
// marked. title and variant name the run; verdict and violations say
// what it showed.
func (r *Recorder) Finish(title, variant, verdict string, violations int) Timeline {
	r.mu.Lock()
	end := time.Since(r.start)
	raw := slices.Clone(r.events)
	lanes := slices.Clone(r.lanes)
	prefix := r.prefix
	r.mu.Unlock()
	sort.SliceStable(raw, func(i, j int) bool { return raw[i].At < raw[j].At })
	events := analyse(raw, prefix, end)
	for i := range events {
		events[i].Seq = i + 1
	}
	// Refs point at the renumbered commands.
	seqOf := map[int]int{}
	for i, e := range events {
		if e.origSeq != 0 {
			seqOf[e.origSeq] = i + 1
		}
	}
	out := make([]Event, len(events))
	for i, e := range events {
		if e.Ref != 0 {
			e.Ref = seqOf[e.Ref]
		}
		out[i] = e.Event
	}
	clients := lanes
	for _, e := range out {
		if e.Client != "" && e.Client != Checker && !slices.Contains(clients, e.Client) {
			clients = append(clients, e.Client)
		}
	}
	return Timeline{Title: title, Variant: variant, Clients: clients, Events: out, End: end,
		Verdict: verdict, Violations: violations}
}

// Pattern matches an event; empty fields match anything.
type Pattern struct {
	// Client and Kind must equal the event's.
	Client string
	Kind   Kind
	// Detail must be part of the event's Detail.
	Detail string
	// Violation requires the event to be marked; Clean requires it not
	// to be.
	Violation, Clean bool
}

func (p Pattern) match(e Event) bool {
	return (p.Client == "" || p.Client == e.Client) && (p.Kind == "" || p.Kind == e.Kind) &&
		strings.Contains(e.Detail, p.Detail) && (!p.Violation || e.Violation != "") && (!p.Clean || e.Violation == "")
}

// String describes the pattern.
func (p Pattern) String() string {
	s := fmt.Sprintf("%s %s %q", p.Client, p.Kind, p.Detail)
	if p.Violation {
		s += " (marked)"
	}
	if p.Clean {
		s += " (unmarked)"
	}
	return s
}

// Follow looks for events matching the patterns, in that order, each
// after the one before; it returns the index of the first pattern not
// found, or -1 when every one was.
func (t Timeline) Follow(ps ...Pattern) int {
	i := 0
	for k, p := range ps {
		for i < len(t.Events) && !p.match(t.Events[i]) {
			i++
		}
		if i == len(t.Events) {
			return k
		}
		i++
	}
	return -1
}
