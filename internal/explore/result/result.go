package result

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/plumbing"
	"github.com/lockmarket/lockmarket/internal/explore/search"
	"github.com/lockmarket/lockmarket/internal/timeline"
)

// Result is what a search found. It is the one account of a search: the
// command line prints it (its JSON is MarshalJSON's), the service's
// explorer sessions answer it, and the tests read it.
type Result struct {
	// Target names what was explored, and About says what it is.
	Target string
	About  string
	// Model is the bounds searched.
	Model action.Model
	// Checked is the properties checked.
	Checked []string
	// Mode is exhaustive, random or pct; Seed is the random modes' seed.
	Mode string
	Seed uint64
	// Schedules is the number of complete schedules run; Pruned the
	// number cut short because every continuation had been covered
	// already: in another order (the sleep sets) or from the same state
	// (the state cache).
	Schedules int
	Pruned    int
	// Coverage is the fraction of the search tree covered: each decision
	// shares its weight equally among the actions enabled there, and an
	// action pruned by a sleep set or the state cache counts as covered.
	// It is 1 exactly when the search is exhaustive; for the random modes,
	// the weight of the distinct schedules run.
	Coverage float64
	// Diverged is the number of replays that did not follow their
	// prefix (the code did something the scheduler does not order); the
	// search is exhaustive only when it is 0.
	Diverged int
	// Reruns is the number of runs of a schedule that were unsteady (a
	// stall longer than a lease's margin: the lease ran out on the
	// server's real time) and were run again; they count nowhere else.
	Reruns int
	// Exhaustive is true when every schedule within the bounds was
	// covered.
	Exhaustive bool
	// Stopped says why the search stopped before it was through:
	// StoppedBudget, StoppedInterrupted, or "" when it ended by itself
	// (through, or at a violation it was told to stop at).
	Stopped string
	// Budget is the search's time budget (Options.Budget; 0 for none),
	// and Elapsed how long it ran, on the machine's clock.
	Budget  time.Duration
	Elapsed time.Duration
	// Violations holds the first violation found of each property, with
	// the shortest schedule found that breaks it, replayed to the same
	// violation on a fresh redis-server (Counterexample.Reproduced).
	Violations []Counterexample
	// Unsteady holds the violations found whose schedule did not break
	// the property again when replayed on a fresh server, twice: the
	// search saw something its replays do not (the machine's timing, or
	// code that does something the scheduler does not order). They are
	// not violations.
	Unsteady []Counterexample
	// Held is the number of complete schedules in which a client held
	// the lock; Ops is, for a recipe, how often each of its operations
	// was called in them and succeeded (Vacuous reads both). Merged
	// (MergeShards), they count the schedules the shards ran.
	Held int
	Ops  []OpCount
	// FromStarted is, by client, how many commands it sent, in the
	// complete schedules, from goroutines it started (with Client.Go, or
	// the go statement, however deep in a library); TimersFired is how
	// many timers of the clients' code (time.Sleep, time.After, a
	// Timer's, a Ticker's, a context's deadline) fired on the virtual
	// clock in them. Both show that what a library does in the
	// background was explored.
	FromStarted map[string]int
	TimersFired int

	// Shard, for a shard of a search (Options.Shard), says which, and
	// how the tree was cut; nil for a whole search. MergedShards is the
	// number of shards MergeShards made the result of (0: none);
	// WholeCount is set when Schedules and Pruned are the whole search's
	// counts, recounted from what the shards explored, and
	// ShardSchedules and ShardPruned are what the shards ran, summed.
	Shard          *ShardInfo
	MergedShards   int
	WholeCount     bool
	ShardSchedules int
	ShardPruned    int

	// Recipe is set when the target is a recipe, whose verdicts Vacuous
	// judges; OwnProperty is the target's own property, for
	// Counterexample. Neither is written in JSON.
	Recipe      bool   `json:"-"`
	OwnProperty string `json:"-"`
	NodeCount   int    // the target's nodes (Redlock), 0 for one server
}

// Counterexample is a violated property and the schedule that breaks it.
type Counterexample struct {
	Violation
	// Actions is the schedule to replay (Explorer.Replay).
	Actions []action.Action `json:"actions"`
	// Steps is the schedule as it ran, up to the violation.
	Steps []action.Step `json:"steps"`
	// Reproduced is true when Actions, replayed on a fresh redis-server
	// (Reproduce), broke the same property; Server is that server's
	// version (empty when none could be started: the replay then ran in
	// a fresh namespace of the explorer's server), and ReplayNote says
	// why it did not break it.
	Reproduced bool   `json:"reproduced"`
	Server     string `json:"redis_server,omitempty"`
	ReplayNote string `json:"replay_note,omitempty"`
	// NotReplayed is true when the replay could not finish (ReplayNote
	// says why): the violation stands as the search found it.
	NotReplayed bool `json:"not_replayed,omitempty"`
	// Replay is the replay's timeline, for the renderers.
	Replay timeline.Timeline `json:"-"`
}

// Counterexample is the violation to show first: the one of the
// property the target is known to break (Target.Property), else the
// first found; nil when nothing was found.
func (r *Result) Counterexample() *Counterexample {
	var c *Counterexample
	for i := range r.Violations {
		if c == nil || r.Violations[i].Property == r.OwnProperty {
			c = &r.Violations[i]
		}
	}
	return c
}

// SchedulesPerSecond is the rate of the search: the schedules it ran
// and cut short, per second of Elapsed (0 before it ran).
func (r *Result) SchedulesPerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Schedules+r.Pruned) / r.Elapsed.Seconds()
}

// Nodes is the number of nodes of the target (Redlock's), 0 for one
// server.
func (r *Result) Nodes() int { return r.NodeCount }

// Note states how time is kept in every search, and how the nodes of a
// target of several are modelled.
func (r *Result) Note() string {
	if r.NodeCount > 0 {
		return timeNote + " " + nodesNote
	}
	return timeNote
}

// timeNote states how time is kept in every run.
var timeNote = fmt.Sprintf(
	"Time is virtual and dilated: every duration the code under test and the server see (the "+
		"lease, the retry wait, each shortening of the leases when the clock advances, the "+
		"clients' clock) is the virtual one times %d, so a stall of the machine of S moves a "+
		"lease by S/%d of virtual time. Constants in the code under test (a 1 ms backoff) shrink "+
		"by as much. Times shown are virtual.",
	plumbing.Dilation,
	plumbing.Dilation,
)

// nodesNote states how the nodes of a target of several are modelled.
const nodesNote = "The nodes are the N logical databases of the one redis-server that follow the " +
	"explorer's own (1 to N by default; the shared counter stays in the explorer's): a " +
	"node-restart deletes a node's keys, as a restart without persistence loses them; a " +
	"clock-jump shortens every lease on one node by the jump, while the clients' clock does not " +
	"move."

// resultJSON is Result's JSON: snake_case keys, durations with their
// unit in the key.
type resultJSON struct {
	Target         string           `json:"target"`
	About          string           `json:"about"`
	Property       string           `json:"property,omitempty"`
	Mode           string           `json:"mode"`
	Seed           *uint64          `json:"seed,omitempty"`
	Model          action.ModelJSON `json:"model"`
	Checked        []string         `json:"checked"`
	Schedules      int              `json:"schedules"`
	Pruned         int              `json:"pruned"`
	Coverage       float64          `json:"coverage"`
	Diverged       int              `json:"diverged"`
	Held           int              `json:"schedules_with_holder"`
	Ops            []OpCount        `json:"ops,omitempty"`
	Vacuous        string           `json:"vacuous,omitempty"`
	Reruns         int              `json:"reruns"`
	Exhaustive     bool             `json:"exhaustive"`
	Stopped        string           `json:"stopped"`
	BudgetS        float64          `json:"budget_s,omitempty"`
	ElapsedS       float64          `json:"elapsed_s"`
	SchedulesPerS  float64          `json:"schedules_per_s"`
	Dilation       int64            `json:"dilation"`
	Violations     []Counterexample `json:"violations"`
	Counterexample *Counterexample  `json:"counterexample"`
	Unsteady       []Counterexample `json:"unsteady"`
	Note           string           `json:"note"`
	Shard          *ShardInfo       `json:"shard,omitempty"`
	MergedShards   int              `json:"merged_shards,omitempty"`
	WholeCount     bool             `json:"whole_count,omitempty"`
	ShardSchedules int              `json:"shard_schedules,omitempty"`
	ShardPruned    int              `json:"shard_pruned,omitempty"`
}

// MarshalJSON writes the result as the command line's -format json and
// the service's explorer sessions give it: snake_case keys, the property
// the target is known to break or whose fix it is (property), durations in
// seconds (elapsed_s, budget_s) and the model's in milliseconds, the
// counterexample to show first (Counterexample) beside every violation,
// and the note on how time is kept.
func (r *Result) MarshalJSON() ([]byte, error) { return json.Marshal(r.JSON()) }

// ResultJSON is a Result as its JSON has it (MarshalJSON), as a value
// encoding/json writes as the result's keys: a document that adds keys of
// its own, after the result's, embeds it.
//
//	json.Marshal(struct {
//		result.ResultJSON
//		Host string `json:"host"`
//	}{res.JSON(), host})
type ResultJSON struct{ resultJSON }

// JSON is the result as MarshalJSON writes it, to embed in a document.
func (r *Result) JSON() ResultJSON {
	j := resultJSON{
		Target:         r.Target,
		About:          r.About,
		Property:       r.OwnProperty,
		Mode:           r.Mode,
		Model:          r.Model.JSON(),
		Checked:        nonNil(r.Checked),
		Schedules:      r.Schedules,
		Pruned:         r.Pruned,
		Coverage:       r.Coverage,
		Diverged:       r.Diverged,
		Reruns:         r.Reruns,
		Exhaustive:     r.Exhaustive,
		Stopped:        r.Stopped,
		BudgetS:        r.Budget.Seconds(),
		ElapsedS:       r.Elapsed.Seconds(),
		SchedulesPerS:  r.SchedulesPerSecond(),
		Dilation:       plumbing.Dilation,
		Violations:     nonNil(r.Violations),
		Counterexample: r.Counterexample(),
		Unsteady:       nonNil(r.Unsteady),
		Note:           r.Note(),
		Held:           r.Held,
		Ops:            r.Ops,
		Shard:          r.Shard,
		MergedShards:   r.MergedShards,
		WholeCount:     r.WholeCount,
		ShardSchedules: r.ShardSchedules,
		ShardPruned:    r.ShardPruned,
	}
	if err := r.Vacuous(); err != nil {
		j.Vacuous = strings.TrimPrefix(err.Error(), ErrVacuous.Error()+": ")
	}
	j.Model.Nodes = r.NodeCount
	if r.Mode == "random" || r.Mode == "pct" {
		j.Seed = &r.Seed
	}
	return ResultJSON{j}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// UnmarshalJSON reads what MarshalJSON writes.
func (r *Result) UnmarshalJSON(b []byte) error {
	var j resultJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	ms := func(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
	s := func(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
	m := action.Model{Clients: j.Model.Clients, Iterations: j.Model.Iterations, Attempts: j.Model.Attempts,
		Faults: j.Model.Faults, Ticks: j.Model.Ticks, Steps: j.Model.Steps,
		FaultKinds: j.Model.FaultKinds,
		Jump: ms(
			j.Model.JumpMS,
		), TTL: ms(j.Model.TTLMS), RenewEvery: ms(j.Model.RenewMS), Retry: ms(j.Model.RetryMS),
		MaxDelay: ms(j.Model.MaxDelayMS)}
	for _, n := range j.Model.TTLsMS {
		m.TTLs = append(m.TTLs, ms(n))
	}
	*r = Result{Target: j.Target, About: j.About, Model: m, Checked: j.Checked, Mode: j.Mode,
		Schedules: j.Schedules, Pruned: j.Pruned, Coverage: j.Coverage, Diverged: j.Diverged,
		Reruns: j.Reruns, Exhaustive: j.Exhaustive, Stopped: j.Stopped,
		Budget: s(j.BudgetS), Elapsed: s(j.ElapsedS),
		Violations: j.Violations, Unsteady: j.Unsteady, OwnProperty: j.Property,
		NodeCount: j.Model.Nodes, Held: j.Held, Ops: j.Ops, Recipe: j.Ops != nil,
		Shard: j.Shard, MergedShards: j.MergedShards, WholeCount: j.WholeCount,
		ShardSchedules: j.ShardSchedules, ShardPruned: j.ShardPruned}
	if j.Seed != nil {
		r.Seed = *j.Seed
	}
	return nil
}

// ErrVacuous is returned (by Result.Vacuous) for a search of a recipe in
// which nothing it was about happened: an operation never succeeded, or
// no client ever held the lock. Its verdict, violation or none, proves
// nothing; the message names the operation and its ok.
var ErrVacuous = errors.New("explore: the search proved nothing")

// OpCount is how often one operation of a recipe was called in the
// complete schedules of a search, and how often its reply meant success.
type OpCount struct {
	// Op is the operation: acquire, release, extend, read_acquire, ...
	Op string `json:"op"`
	// Calls and Succeeded count its calls, and those whose reply meant
	// success (its ok).
	Calls     int `json:"calls"`
	Succeeded int `json:"succeeded"`
	// OK is the replies that mean success, as the manifest gives them.
	OK string `json:"ok"`
	// Replies is a few of the replies it got, with how often, as
	// `"OK" ×12`.
	Replies []string `json:"replies,omitempty"`
}

// Vacuous says, for a search of a recipe that found no violation, why its
// verdict proves nothing (wrapping ErrVacuous), or nil: an op that was
// called and never succeeded (a release or an extension only in a search
// through every schedule: a few random ones may all have lost the lease),
// or no client that ever held the lock.
func (r *Result) Vacuous() error {
	if !r.Recipe || len(r.Violations) > 0 || r.Schedules == 0 {
		return nil
	}
	for _, o := range r.Ops {
		take := strings.HasSuffix(o.Op, "acquire")
		if o.Calls == 0 || o.Succeeded > 0 || !take && !r.Exhaustive {
			continue
		}
		replies := "none"
		if len(o.Replies) > 0 {
			replies = strings.Join(o.Replies, ", ")
		}
		why := "so no client ever held the lock"
		if !take {
			why = "so the search never saw one succeed"
		}
		return fmt.Errorf(
			"%w: ops.%s.ok %s matched none of its %d replies in %d schedules (%s), %s: "+
				"fix its ok, or the op",
			ErrVacuous, o.Op, o.OK, o.Calls, r.Schedules, replies, why,
		)
	}
	if r.Held == 0 {
		return fmt.Errorf(
			"%w: no client held the lock in any of %d schedules", ErrVacuous, r.Schedules,
		)
	}
	return nil
}

// ActivityText says what happened in the search: how many schedules had
// a holder, and how often each op of a recipe succeeded.
func (r *Result) ActivityText() string {
	s := fmt.Sprintf("activity: a client held the lock in %d of %d schedules", r.Held, r.Schedules)
	if r.WholeCount {
		// Held and Ops count what the shards ran.
		s = fmt.Sprintf("activity: a client held the lock in %d of the %d schedules the "+
			"shards ran", r.Held, r.ShardSchedules)
	}
	var parts []string
	for _, o := range r.Ops {
		parts = append(parts, fmt.Sprintf("%s %d of %d", o.Op, o.Succeeded, o.Calls))
	}
	if len(parts) > 0 {
		s += "; succeeded: " + strings.Join(parts, ", ")
	}
	return s
}

// Why a search stopped before it was through (Result.Stopped).
const (
	// StoppedBudget is a search that ran out of its Options.Budget.
	StoppedBudget = "budget"
	// StoppedInterrupted is a search whose context ended (Ctrl-C, a
	// signal, a caller's deadline).
	StoppedInterrupted = "interrupted"
)

// ShardInfo says which part of a search a result is (Options.Shard), how
// the tree was cut, and what the search was, so that MergeShards can tell
// the shards of one search from others.
type ShardInfo struct {
	// Index and Count: the Index-th, from 0, of Count shards.
	Index int `json:"index"`
	Count int `json:"count"`
	// Depth is where the tree was cut; Subtrees and Runs the parts dealt
	// to the shards (search.Split).
	Depth    int `json:"split_depth"`
	Subtrees int `json:"subtrees"`
	Runs     int `json:"runs"`
	// Digest names the parts: the same in every shard of one search.
	Digest string `json:"split_digest"`
	// Fingerprint names the search (the target, its code, the model and
	// the options that choose the schedules), and Commit the program's
	// version; the caller that knows them sets them.
	Fingerprint string `json:"fingerprint,omitempty"`
	Commit      string `json:"commit,omitempty"`
	// Explored is what the shard searched of the state graph
	// (search.Explored), from which MergeShards counts the whole
	// search's schedules; nil when the shard keeps none (several
	// workers, no state cache, DPOR, a search cut short, a record past
	// search.MaxExplored).
	Explored *search.Explored[action.Action] `json:"explored,omitempty"`
}
