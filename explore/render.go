package explore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/redis/rediscmd"
	"github.com/lockmarket/lockmarket/internal/redis/redisserver"
	"github.com/lockmarket/lockmarket/internal/timeline"
)

// Record replays a schedule (actions, then the first enabled command or
// tick at each step) and returns it as a timeline: each client's commands
// and replies at their virtual time, the pauses and crashes, the leases
// that ran out, and the violations found, marked with their property.
func (e *Explorer) Record(ctx context.Context, actions []Action) (timeline.Timeline, []Violation, error) {
	s, err := e.replay(ctx, actions)
	if err != nil {
		return timeline.Timeline{}, nil, err
	}
	return e.timeline(s), s.violations, nil
}

// timeline builds the timeline of a schedule that ran.
func (e *Explorer) timeline(s *schedule) timeline.Timeline {
	var events []timeline.Event
	seq := 0
	add := func(ev timeline.Event) int {
		seq++
		ev.Seq = seq
		events = append(events, ev)
		return seq
	}
	byStep := map[int][]cmdRecord{}
	for _, r := range s.cmdLog {
		byStep[r.step] = append(byStep[r.step], r)
	}
	expired := map[time.Duration][]string{}
	for _, x := range s.expired {
		expired[x.at] = append(expired[x.at], x.keys...)
	}
	batch := 0
	pauseEnds := map[string]time.Duration{} // client -> end of its pause
	jumped := map[string]bool{}             // nodes whose clock jumped
	for i, st := range s.steps {
		at := time.Duration(st.ClockMS) * time.Millisecond
		switch st.Action.Kind {
		case Run:
			if !strings.Contains(st.Action.Command, "lock:") {
				// The renderers leave out commands on anything but a
				// lock; the critical section's are the point here.
				add(timeline.Event{Client: st.Action.Client, At: at, Kind: timeline.Result, Detail: e.target.short(st.Text)})
				break
			}
			node := commandNode(st.Action.Command)
			for _, r := range byStep[i] {
				if node != "" {
					// The same key on two nodes is two locks.
					all := make([][]string, len(r.args))
					for j, args := range r.args {
						all[j] = nodeArgs(e.ns, node, args)
					}
					r.args = all
				}
				b := 0
				if len(r.args) > 1 {
					batch++
					b = batch
				}
				refs := make([]int, len(r.args))
				for j, args := range r.args {
					args = virtualArgs(e.factor, args)
					refs[j] = add(timeline.Event{Client: r.client, At: at, Kind: timeline.Command, Batch: b, Args: args,
						Detail: e.target.showArgs(args)})
				}
				for j := range r.args {
					detail := e.target.short(r.values[j])
					if r.errs[j] != "" {
						detail = "error: " + e.target.short(r.errs[j])
					}
					add(timeline.Event{Client: r.client, At: at, Kind: timeline.Reply, Batch: b, Ref: refs[j],
						Value: r.values[j], Err: r.errs[j], Detail: rediscmd.Clip(detail, 48)})
				}
			}
		case Tick:
			for _, c := range slices.Sorted(maps.Keys(pauseEnds)) {
				if end := pauseEnds[c]; end <= st.Action.At {
					add(timeline.Event{Client: c, At: end, Kind: timeline.PauseEnd, Detail: "goes on at " + fmtAt(end)})
					delete(pauseEnds, c)
				}
			}
			for _, k := range expired[at] {
				add(timeline.Event{At: at, Kind: timeline.LeaseExpired, Key: e.ns + k,
					Detail: fmt.Sprintf("lease on %s ran out at %s (virtual clock)", k, fmtAt(st.Action.At))})
			}
			// A lease on a node whose clock jumped runs out before its
			// TTL says: the timeline cannot read it from the commands.
			to := st.Action.At
			for _, k := range expired[to] {
				if _, n := splitNode(k); jumped[n] {
					add(timeline.Event{At: to, Kind: timeline.LeaseExpired, Key: e.ns + k, Detail: fmt.Sprintf(
						"lease on %s ran out at %s, early: %s's clock jumped", k, fmtAt(st.Action.At), n)})
				}
			}
		case Pause:
			add(timeline.Event{Client: st.Action.Client, At: at, Kind: timeline.PauseStart, Detail: st.Text})
			if d, ok := e.model.pauseLength(st.Action.Length); ok && d >= 0 {
				pauseEnds[st.Action.Client] = at + d
			}
		case Crash:
			add(timeline.Event{Client: st.Action.Client, At: at, Kind: timeline.Crash, Detail: st.Text})
		case Restart, Jump:
			if st.Action.Kind == Jump {
				jumped[st.Action.Node] = true
			}
			// The node has a lane of its own; the leases it lost end in
			// their holders' lanes.
			add(timeline.Event{Client: st.Action.Node, At: at, Kind: timeline.Result, Detail: st.Text})
			for _, k := range s.lost[i] {
				how := st.Action.Node + " restarts empty: " + k + " is lost"
				if st.Action.Kind == Jump {
					how = fmt.Sprintf("%s's clock jumps %v forward: lease on %s ran out", st.Action.Node, e.model.Jump, k)
				}
				add(timeline.Event{At: at, Kind: timeline.LeaseExpired, Key: e.ns + k, Detail: how})
			}
		}
		if st.Violation != "" {
			for _, v := range s.violations {
				if v.Step == i {
					add(timeline.Event{Client: timeline.Checker, At: at, Kind: timeline.Finding, Violation: v.Property,
						Detail: v.Property + ": " + v.Message})
				}
			}
		}
	}
	if len(s.violations) == 0 {
		add(timeline.Event{Client: timeline.Checker, At: s.end, Kind: timeline.Finding, Detail: "no violation"})
	}
	rec := timeline.NewRecorderAt(e.ns, time.Now().Add(-s.end))
	rec.Lanes(append(slices.Clone(s.clients), struck(s)...)...)
	rec.Merge(events)
	verdict := "No violation."
	if len(s.violations) > 0 {
		var ps []string
		for _, v := range s.violations {
			ps = append(ps, v.Property)
		}
		verdict = "Broken: " + strings.Join(ps, ", ") + " (times are virtual)."
	}
	return rec.Finish(e.target.Name, "explored schedule", verdict, len(s.violations))
}

// showArgs renders a command for reading: keys without the namespace,
// tokens shortened, scripts named.
func (t *Target) showArgs(args []string) string { return rediscmd.Show(args, t.short) }

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
	// Timeline is the replay, for the renderers.
	Timeline timeline.Timeline `json:"-"`
}

// Reproduce starts a private redis-server, replays f's schedule of target
// t under model m on it, and reports whether the same property broke.
func Reproduce(ctx context.Context, t *Target, m Model, f Found) (Reproduction, error) {
	r, err := reproduce(ctx, t, m, f)
	if errors.Is(err, redisserver.ErrNoBinary) {
		return Reproduction{Note: "no redis-server on PATH to replay on"}, nil
	}
	return r, err
}

// reproduce is Reproduce, which says redisserver.ErrNoBinary when there
// is no redis-server to start.
func reproduce(ctx context.Context, t *Target, m Model, f Found) (Reproduction, error) {
	srv, err := redisserver.Start(ctx, redisserver.Options{})
	if err != nil {
		return Reproduction{}, err
	}
	defer srv.Stop()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), Protocol: 2, DisableIdentity: true})
	defer rdb.Close()
	version := redisserver.Version(ctx, rdb)
	e, err := New(ctx, rdb, t, m)
	if err != nil {
		return Reproduction{}, err
	}
	defer e.Close()
	tl, vs, err := e.Record(ctx, f.Actions)
	if err != nil {
		if ctx.Err() != nil {
			return Reproduction{}, err
		}
		return Reproduction{Server: version, Note: err.Error()}, nil
	}
	r := Reproduction{Server: version, Timeline: tl, Reproduced: brokeAgain(vs, f.Property)}
	if !r.Reproduced {
		r.Note = "the replay did not break " + f.Property
	}
	return r, nil
}

// brokeAgain reports whether vs breaks property.
func brokeAgain(vs []Violation, property string) bool {
	return slices.ContainsFunc(vs, func(v Violation) bool { return v.Property == property })
}
