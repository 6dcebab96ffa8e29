package sched

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/plumbing"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/redis/rediscmd"
	"github.com/lockmarket/lockmarket/internal/redis/redisserver"
	"github.com/lockmarket/lockmarket/internal/timeline"
	"github.com/redis/go-redis/v9"
)

// Record replays a schedule (actions, then the first enabled command or
// tick at each step) and returns it as a timeline: each client's commands
// and replies at their virtual time, the pauses and crashes, the leases
// that ran out, and the violations found, marked with their property.
func (e *Explorer) Record(
	ctx context.Context,
	actions []action.Action,
) (timeline.Timeline, []result.Violation, error) {
	s, err := e.replay(ctx, actions)
	if err != nil {
		return timeline.Timeline{}, nil, err
	}
	return e.timeline(s), s.Violations, nil
}

// timeline builds the timeline of a schedule that ran.
func (e *Explorer) timeline(s *Schedule) timeline.Timeline {
	b := newTimelineBuilder(e, s)
	for i, st := range s.Steps {
		b.step(i, st)
	}
	if len(s.Violations) == 0 {
		b.add(
			timeline.Event{
				Client: timeline.Checker,
				At:     s.End,
				Kind:   timeline.Finding,
				Detail: "no violation",
			},
		)
	}
	rec := timeline.NewRecorderAt(e.KeyPrefix, time.Now().Add(-s.End))
	rec.Lanes(append(slices.Clone(s.Clients), nodesStruck(s)...)...)
	rec.Merge(b.events)
	verdict := "No violation."
	if len(s.Violations) > 0 {
		var ps []string
		for _, v := range s.Violations {
			ps = append(ps, v.Property)
		}
		verdict = "Broken: " + strings.Join(ps, ", ") + " (times are virtual)."
	}
	return rec.Finish(e.target.Name, "explored schedule", verdict, len(s.Violations))
}

// timelineBuilder turns a schedule's steps into timeline events, in order.
type timelineBuilder struct {
	e      *Explorer
	s      *Schedule
	events []timeline.Event
	seq    int // the last event's number
	batch  int // the last pipeline's or transaction's number

	byStep    map[int][]CmdRecord        // the commands each step sent
	expired   map[time.Duration][]string // the keys that ran out at each time
	pauseEnds map[string]time.Duration   // client -> end of its pause
	jumped    map[string]bool            // nodes whose clock jumped
}

func newTimelineBuilder(e *Explorer, s *Schedule) *timelineBuilder {
	b := &timelineBuilder{
		e:         e,
		s:         s,
		byStep:    map[int][]CmdRecord{},
		expired:   map[time.Duration][]string{},
		pauseEnds: map[string]time.Duration{},
		jumped:    map[string]bool{},
	}
	for _, r := range s.CmdLog {
		b.byStep[r.Step] = append(b.byStep[r.Step], r)
	}
	for _, x := range s.Expired {
		b.expired[x.At] = append(b.expired[x.At], x.Keys...)
	}
	return b
}

// add numbers ev, appends it and returns its number.
func (b *timelineBuilder) add(ev timeline.Event) int {
	b.seq++
	ev.Seq = b.seq
	b.events = append(b.events, ev)
	return b.seq
}

// step adds the events of step i, then the violations found at it.
func (b *timelineBuilder) step(i int, st action.Step) {
	at := time.Duration(st.ClockMS) * time.Millisecond
	switch st.Action.Kind {
	case action.Run:
		b.run(i, st, at)
	case action.Tick:
		b.tick(st, at)
	case action.Pause:
		b.add(
			timeline.Event{
				Client: st.Action.Client,
				At:     at,
				Kind:   timeline.PauseStart,
				Detail: st.Text,
			},
		)
		if d, ok := b.e.model.PauseLength(st.Action.Length); ok && d >= 0 {
			b.pauseEnds[st.Action.Client] = at + d
		}
	case action.Crash:
		b.add(
			timeline.Event{Client: st.Action.Client, At: at, Kind: timeline.Crash, Detail: st.Text},
		)
	case action.Restart, action.Jump:
		b.nodeFault(i, st, at)
	}
	if st.Violation != "" {
		for _, v := range b.s.Violations {
			if v.Step == i {
				b.add(
					timeline.Event{
						Client:    timeline.Checker,
						At:        at,
						Kind:      timeline.Finding,
						Violation: v.Property,
						Detail:    v.Property + ": " + v.Message,
					},
				)
			}
		}
	}
}

// run adds the commands step i sent and their replies; a step on anything
// but a lock is one result.
func (b *timelineBuilder) run(i int, st action.Step, at time.Duration) {
	e := b.e
	if st.HeldMS > 0 {
		// Held in flight: its sending shows where it happened.
		b.add(
			timeline.Event{
				Client: st.Action.Client,
				At:     at - time.Duration(st.HeldMS)*time.Millisecond,
				Kind:   timeline.Result,
				Detail: fmt.Sprintf("sends %s (held in flight until %s)", st.Action.Command,
					action.FormatMS(st.ClockMS)),
			},
		)
	}
	if !strings.Contains(st.Action.Command, "lock:") {
		// The renderers leave out commands on anything but a
		// lock; the critical section's are the point here.
		b.add(
			timeline.Event{
				Client: st.Action.Client,
				At:     at,
				Kind:   timeline.Result,
				Detail: e.target.Short(st.Text),
			},
		)
		return
	}
	node := plumbing.CommandNode(st.Action.Command)
	for _, r := range b.byStep[i] {
		if node != "" {
			// The same key on two nodes is two locks.
			all := make([][]string, len(r.Args))
			for j, args := range r.Args {
				all[j] = plumbing.NodeArgs(e.KeyPrefix, node, args)
			}
			r.Args = all
		}
		b.sent(r, at)
	}
}

// sent adds the commands of one round trip, numbered as a batch when there
// are several, and then their replies.
func (b *timelineBuilder) sent(r CmdRecord, at time.Duration) {
	e := b.e
	batch := 0
	if len(r.Args) > 1 {
		b.batch++
		batch = b.batch
	}
	refs := make([]int, len(r.Args))
	for j, args := range r.Args {
		args = plumbing.VirtualArgs(e.Factor, args)
		refs[j] = b.add(
			timeline.Event{
				Client: r.Client,
				At:     at,
				Kind:   timeline.Command,
				Batch:  batch,
				Args:   args,
				Detail: e.target.showArgs(args),
			},
		)
	}
	for j := range r.Args {
		detail := e.target.Short(r.Values[j])
		if r.Errs[j] != "" {
			detail = "error: " + e.target.Short(r.Errs[j])
		}
		b.add(
			timeline.Event{
				Client: r.Client,
				At:     at,
				Kind:   timeline.Reply,
				Batch:  batch,
				Ref:    refs[j],
				Value:  r.Values[j],
				Err:    r.Errs[j],
				Detail: rediscmd.Clip(detail, 48),
			},
		)
	}
}

// tick adds the pauses that ended by the tick's time and the leases that
// ran out at it.
func (b *timelineBuilder) tick(st action.Step, at time.Duration) {
	for _, c := range slices.Sorted(maps.Keys(b.pauseEnds)) {
		if end := b.pauseEnds[c]; end <= st.Action.At {
			b.add(
				timeline.Event{
					Client: c,
					At:     end,
					Kind:   timeline.PauseEnd,
					Detail: "goes on at " + action.FormatAt(end),
				},
			)
			delete(b.pauseEnds, c)
		}
	}
	for _, k := range b.expired[at] {
		b.add(timeline.Event{At: at, Kind: timeline.LeaseExpired, Key: b.e.KeyPrefix + k,
			Detail: fmt.Sprintf(
				"lease on %s ran out at %s (virtual clock)", k, action.FormatAt(st.Action.At),
			)})
	}
	// A lease on a node whose clock jumped runs out before its
	// TTL says: the timeline cannot read it from the commands.
	to := st.Action.At
	for _, k := range b.expired[to] {
		if _, n := plumbing.SplitNode(k); b.jumped[n] {
			b.add(
				timeline.Event{
					At:   to,
					Kind: timeline.LeaseExpired,
					Key:  b.e.KeyPrefix + k,
					Detail: fmt.Sprintf(
						"lease on %s ran out at %s, early: %s's clock jumped", k,
						action.FormatAt(st.Action.At), n,
					),
				},
			)
		}
	}
}

// nodeFault adds a node's restart or clock jump, in the node's own lane,
// and the leases it lost, in their holders' lanes.
func (b *timelineBuilder) nodeFault(i int, st action.Step, at time.Duration) {
	if st.Action.Kind == action.Jump {
		b.jumped[st.Action.Node] = true
	}
	b.add(timeline.Event{Client: st.Action.Node, At: at, Kind: timeline.Result, Detail: st.Text})
	for _, k := range b.s.lost[i] {
		how := st.Action.Node + " restarts empty: " + k + " is lost"
		if st.Action.Kind == action.Jump {
			how = fmt.Sprintf(
				"%s's clock jumps %v forward: lease on %s ran out", st.Action.Node, b.e.model.Jump,
				k,
			)
		}
		b.add(timeline.Event{At: at, Kind: timeline.LeaseExpired, Key: b.e.KeyPrefix + k,
			Detail: how})
	}
}

// showArgs renders a command for reading: keys without the namespace,
// tokens shortened, scripts named.
func (t *Target) showArgs(args []string) string { return rediscmd.Show(args, t.Short) }

// Reproduction is the outcome of replaying a counterexample on a fresh
// redis-server.
type Reproduction struct {
	// Reproduced is true when the replay broke the same property.
	Reproduced bool `json:"reproduced"`
	// Server is the redis-server version it ran on, empty if none could
	// be started.
	Server string `json:"server,omitempty"`
	// Note says why it was not reproduced, if it was not.
	Note string `json:"note,omitempty"`
	// NotReplayed is true when the replay could not finish (the server
	// could not start, ran out of its memory, the replay outlasted
	// ReplayBound, the code failed on it): the replay says nothing either
	// way, and a violation the search found stays one.
	NotReplayed bool `json:"not_replayed,omitempty"`
	// Timeline is the replay, for the renderers.
	Timeline timeline.Timeline `json:"-"`
}

// Reproduce starts a private redis-server, replays f's schedule of target
// t under model m on it, and reports whether the same property broke.
func Reproduce(ctx context.Context, t *Target, m action.Model, f result.Counterexample) (Reproduction, error) {
	r, err := reproduce(ctx, t, m, f)
	if errors.Is(err, redisserver.ErrNoBinary) {
		return Reproduction{Note: "no redis-server on PATH to replay on"}, nil
	}
	return r, err
}

// replayServer are the options of a replay's server for target t: its
// memory bounded (maxmemory, noeviction: a write past it fails), and for
// a recipe, whose scripts are code the explorer does not read, confined
// as redisserver.DefaultConfinement says.
func replayServer(t *Target) redisserver.Options {
	if t.lock().Ops != nil {
		c := redisserver.DefaultConfinement
		return redisserver.Options{Confine: &c}
	}
	return redisserver.Options{Args: []string{"--maxmemory", "256mb", "--maxmemory-policy", "noeviction"}}
}

// ReplayBound is how long a replay on a fresh server may take before it
// is given up as not replayed.
var ReplayBound = 60 * time.Second

var errReplayBound = errors.New("the replay took longer than its bound")

// reproduce is Reproduce, which says redisserver.ErrNoBinary when there
// is no redis-server to start.
func reproduce(ctx context.Context, t *Target, m action.Model, f result.Counterexample) (Reproduction, error) {
	srv, err := redisserver.Start(ctx, replayServer(t))
	if err != nil {
		if errors.Is(err, redisserver.ErrNoBinary) || ctx.Err() != nil {
			return Reproduction{}, err
		}
		return notReplayed("", err), nil
	}
	defer srv.Stop()
	rctx, cancel := context.WithTimeoutCause(ctx, ReplayBound, errReplayBound)
	defer cancel()
	// Over the server's unix socket, as a search on a private server runs.
	opts := srv.OverSocket(srv.ClientOptions())
	opts.Protocol, opts.DisableIdentity = 2, true
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	admin := redis.NewClient(srv.OverSocket(srv.AdminOptions()))
	version := redisserver.Version(rctx, admin)
	admin.Close()
	e, err := NewControlled(rctx, rdb, srv.OverSocket(srv.AdminOptions()), t, m)
	if err != nil {
		if ctx.Err() != nil {
			return Reproduction{}, err
		}
		return notReplayed(version, replayCause(rctx, err)), nil
	}
	defer e.Close()
	tl, vs, err := e.Record(rctx, f.Actions)
	switch {
	case err != nil && ctx.Err() != nil:
		return Reproduction{}, err
	case errors.Is(err, ErrNotEnabled), errors.Is(err, ErrUnsteady):
		return Reproduction{Server: version, Note: err.Error()}, nil
	case err != nil:
		return notReplayed(version, replayCause(rctx, err)), nil
	}
	r := Reproduction{Server: version, Timeline: tl, Reproduced: brokeAgain(vs, f.Property)}
	if !r.Reproduced {
		r.Note = "the replay did not break " + f.Property
	}
	return r, nil
}

// notReplayed is the Reproduction of a replay on server version that
// could not finish, for err.
func notReplayed(version string, err error) Reproduction {
	return Reproduction{Server: version, NotReplayed: true, Note: "not replayed: " + err.Error()}
}

// replayCause is why a replay under ctx failed with err: its bound, if
// that is what ended it.
func replayCause(ctx context.Context, err error) error {
	if c := context.Cause(ctx); errors.Is(c, errReplayBound) {
		return fmt.Errorf("%w (%v)", c, ReplayBound)
	}
	return err
}

// brokeAgain reports whether vs breaks property.
func brokeAgain(vs []result.Violation, property string) bool {
	return slices.ContainsFunc(vs, func(v result.Violation) bool { return v.Property == property })
}
