package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/explore"
	"github.com/lockmarket/lockmarket/internal/schema"
	"github.com/lockmarket/lockmarket/market"
)

// maxWorkers bounds -workers: each worker holds a few connections of its
// own to the one server.
const maxWorkers = 64

func init() {
	subcommands["explore"] = subcommand{run: runExplore,
		summary: "search the schedules of a lock's (or the market's) clients for the failure of a property"}
}

const exploreUsage = `usage: simulate explore (-recipe N [-fixed] | -strategy S [-fencing] | -watchdog
                        | -redlock [-nodes N] | -acquire F -release F [-extend F]
                        | -read-acquire F -read-release F -write-acquire F -write-release F
                        | -recipe-dir DIR) [flags]

Runs a lock's real code (a recipe of package internal/flawed, its fix, Lua
scripts, locking.RedlockMutex, or the market's List and Purchase under a
strategy) in several clients against a real Redis, holding every command
until a scheduler lets it go, on a virtual clock, and searches the
schedules within the bounds: which client's command runs next, when time
passes, and where a fault strikes (a pause shorter or longer than the
lease, a pause for good, a crash; for Redlock, a node that restarts empty
or whose clock jumps forward). Each client: take the lock (retrying),
read a shared counter and write it back plus one (readers of a read-write
lock read two values the writer changes together), release. It reports
every property broken, with the shortest schedule found that breaks it,
replayed on a fresh redis-server (one whose replay does not break it again,
twice, is reported apart as unsteady and does not count):

  mutual_exclusion  two clients hold leases that have not run out (one of them to write)
  resource          the counter lost an update, or a reader saw a write half done
  liveness          a lock without expiry that no live client holds keeps a client waiting
                    (for a recipe: any key it wrote without expiry, after every lease ran out)
  ownership         a release or extension answered as a success once the hold had ended
                    (-recipe-dir; -check adds it to the others)

With -strategy, two buyers purchase one listing while a third client lists
another item, and resource means the market's audit found a violation (the
listing sold twice, say); for coarse and fine, who holds the lock is read
from the commands on its key.

With -redlock, the lock is locking.RedlockMutex over -nodes nodes, which are
logical databases 1 to N of the one server; -faults node-restart (a node
loses its keys) and clock-jump (a node's leases shorten by -jump) strike
them.

Lua convention: KEYS[1] lock key, ARGV[1] owner token, ARGV[2] TTL in ms;
acquire and extend return 1 on success (0 or nil: refused); release returns
1 when it deleted the lock, 0 otherwise. -recipe-dir DIR takes any other
convention from DIR/recipe.json, a manifest that says how each operation is
called (a script, or commands sent one round trip at a time), with what
keys and arguments, and which replies mean success; it also checks
ownership: a release or extension answered as a success once the hold had
ended (see docs/explorer.md). Examples: examples/recipes/.

Time is virtual, and dilated: every duration the code and the server see
is the virtual one times 1,000,000 (a Lua script's ARGV[2] for a 10s lease
is 10000000000), so the machine's speed cannot decide a verdict.
-budget D, Ctrl-C or SIGTERM stop the search: it then prints (and -out
writes) what it found so far, says it was cut short, and exits as below.
Exit status: 0 no violation, 1 a violation (replayed), 2 bad input (a flag,
a script that does not parse or answers outside the convention, a manifest
that cannot be used).

Flags:
`

const exploreExample = `
Examples:
  simulate explore -recipe 4
  simulate explore -recipe 6 -fixed -format json
  simulate explore -watchdog -faults pause-short
  simulate explore -strategy fine -first
  simulate explore -strategy fine -budget 20s
  simulate explore -strategy fine -fencing -clients 2
  simulate explore -redlock -faults node-restart -first
  simulate explore -acquire examples/recipes/broken/acquire.lua \
      -release examples/recipes/broken/release.lua \
      -extend examples/recipes/broken/extend.lua -out /tmp/ce
`

// exploreOptions are the parsed flags of "simulate explore".
type exploreOptions struct {
	redis    string
	recipe   string
	fixed    bool
	strategy string
	fencing  bool
	watchdog bool
	redlock  bool
	nodes    int
	lua      explore.LuaRecipe
	dir      string
	manifest *explore.Target
	model    explore.Model
	clients  int
	check    []string
	mode     string
	seed     uint64
	runs     int
	depth    int
	first    bool
	noReduce bool
	workers  int
	budget   time.Duration
	format   string
	out      string
	verbose  bool
}

func parseExploreFlags(args []string, stderr io.Writer) (exploreOptions, error) {
	f := newCmdFlags("simulate explore", exploreUsage, exploreExample, stderr)
	var o exploreOptions
	files := map[string]*string{}
	for _, name := range []string{"acquire", "release", "extend", "read-acquire", "read-release", "write-acquire", "write-release"} {
		files[name] = f.String(name, "", "Lua `FILE`: the "+strings.ReplaceAll(name, "-", " ")+" script")
	}
	var faults, bound, check string
	var ttl, jump, renew time.Duration
	var ttls string
	f.redis(&o.redis, "the explorer needs one server, not a cluster")
	f.StringVar(&o.recipe, "recipe", "", "explore gallery recipe `N` ("+strings.Join(explore.Recipes, ", ")+")")
	f.BoolVar(&o.fixed, "fixed", false, "explore the recipe's fix instead")
	f.StringVar(&o.strategy, "strategy", "", "explore the market under strategy `S` (watch, coarse, fine, lua)")
	f.BoolVar(&o.fencing, "fencing", false, "with -strategy: the market's locks fence their commits (market.WithFencing)")
	f.BoolVar(&o.watchdog, "watchdog", false, "explore locking.Mutex renewed by a watchdog (locking.KeepAlive), no fencing")
	f.BoolVar(&o.redlock, "redlock", false, "explore locking.RedlockMutex over several nodes, no fencing")
	f.IntVar(&o.nodes, "nodes", 0, fmt.Sprintf("with -redlock: `N` nodes, 1 to %d: logical databases 1 to N of the server "+
		"(default %d)", explore.MaxNodes, explore.DefaultNodes))
	f.DurationVar(&jump, "jump", 0, "with -faults clock-jump: how far a node's clock jumps forward (default: one lease)")
	f.IntVar(&o.clients, "clients", 0, "clients, 2 to 4 (default: the target's, 3 where the failure needs a third)")
	f.DurationVar(&ttl, "ttl", 10*time.Second, "the lease (virtual time; 1s to 10m)")
	f.StringVar(&o.dir, "recipe-dir", "", "explore the recipe in `DIR`: DIR/recipe.json says how each operation is called")
	f.StringVar(&ttls, "ttls", "", "a lease per client, in order, as `D,D,...` (10s,3s); clients past the list take "+
		"its last (default: -ttl for every client)")
	f.DurationVar(&renew, "renew-every", 0, "each holder extends its hold every `D` of virtual time while it holds "+
		"it, as a watchdog does, instead of once (a target with an extension)")
	f.StringVar(&faults, "faults", "pause,crash", "faults that may strike: "+strings.Join(explore.FaultNames, ", ")+", none")
	f.StringVar(&bound, "bound", "", "bounds `iterations=N,attempts=N,faults=N,ticks=N,steps=N`: critical sections per "+
		"client (1), attempts at the lock per section (2; 1 with 3 clients or more), faults per schedule (1), "+
		"advances of the clock per schedule (3), commands per client per schedule (10)")
	f.StringVar(&check, "check", "", "properties to check, comma-separated, or all (default: the target's)")
	f.StringVar(&o.mode, "mode", "exhaustive", "exhaustive (every schedule within the bounds), random (random walks) or pct (random priorities)")
	f.seed(&o.seed, "the random and pct modes' schedules")
	f.IntVar(&o.runs, "schedules", 2000, "random and pct modes: how many schedules")
	f.IntVar(&o.depth, "depth", 3, "pct mode: the bug depth `d` (d-1 changes of priority per schedule), 1 to 10")
	f.BoolVar(&o.first, "first", false, "stop at the first violation (the search is then not exhaustive)")
	f.BoolVar(&o.noReduce, "no-reduction", false, "explore commuting steps in every order too")
	f.DurationVar(&o.budget, "budget", 0, "stop the search after `D` (0: none) and report what it found; Ctrl-C too")
	f.IntVar(&o.workers, "workers", min(runtime.GOMAXPROCS(0), maxWorkers),
		"exhaustive search for every violation: schedules run at once, `N` 1 to 64 (same result; default: the cores)")
	f.format(&o.format, "table", "json")
	f.out(&o.out, "each counterexample's timeline (SVG and text)")
	f.verbose(&o.verbose, "each counterexample's steps as well as its timeline")
	if err := f.parse(args); err != nil {
		return o, err
	}
	bad := func(format string, a ...any) (exploreOptions, error) {
		return o, f.bad(format, a...)
	}
	if o.budget < 0 {
		return bad("-budget %v: want 0 (none) or more", o.budget)
	}
	if o.workers < 1 || o.workers > maxWorkers {
		return bad("-workers %d: want 1 to %d", o.workers, maxWorkers)
	}
	targets := 0
	if o.recipe != "" {
		targets++
		if !slices.Contains(explore.Recipes, o.recipe) {
			return bad("-recipe %q: want one of %s", o.recipe, strings.Join(explore.Recipes, ", "))
		}
	}
	if o.strategy != "" {
		targets++
		if _, err := market.ParseStrategy(o.strategy); err != nil {
			return bad("-strategy %q: want one of watch, coarse, fine, lua", o.strategy)
		}
	}
	if o.watchdog {
		targets++
	}
	if o.redlock {
		targets++
	}
	lua := false
	for name, p := range files {
		if *p == "" {
			continue
		}
		lua = true
		b, err := os.ReadFile(*p)
		if err != nil {
			return bad("-%s: %v", name, err)
		}
		scripts := map[string]*explore.Script{
			"acquire": &o.lua.Acquire, "release": &o.lua.Release, "extend": &o.lua.Extend,
			"read-acquire": &o.lua.ReadAcquire, "read-release": &o.lua.ReadRelease,
			"write-acquire": &o.lua.WriteAcquire, "write-release": &o.lua.WriteRelease,
		}
		*scripts[name] = explore.Script{Name: *p, Source: string(b)}
	}
	if lua {
		targets++
	}
	if o.dir != "" {
		targets++
	}
	if targets != 1 {
		return bad("give exactly one target: -recipe N, -strategy S, -watchdog, -redlock, Lua scripts, or -recipe-dir DIR")
	}
	if o.dir != "" {
		t, err := explore.LoadRecipe(o.dir)
		if err != nil {
			// One line, naming the field.
			fmt.Fprintf(stderr, "simulate explore: %v\n", err)
			return o, fmt.Errorf("%w: %v", errUsage, err)
		}
		o.manifest = t
	}
	if o.fixed && o.recipe == "" {
		return bad("-fixed goes with -recipe")
	}
	if o.fencing && o.strategy == "" {
		return bad("-fencing goes with -strategy")
	}
	if o.nodes != 0 && !o.redlock {
		return bad("-nodes goes with -redlock")
	}
	if o.redlock && o.nodes == 0 {
		o.nodes = explore.DefaultNodes
	}
	if o.redlock && (o.nodes < 1 || o.nodes > explore.MaxNodes) {
		return bad("-nodes %d: must be 1 to %d", o.nodes, explore.MaxNodes)
	}
	o.model = explore.DefaultModel()
	o.model.TTL = ttl
	if ttls != "" {
		for d := range strings.SplitSeq(ttls, ",") {
			v, err := time.ParseDuration(strings.TrimSpace(d))
			if err != nil {
				return bad("-ttls %q: want leases such as 10s,3s", ttls)
			}
			o.model.TTLs = append(o.model.TTLs, v)
		}
		if !f.set("ttl") {
			// Pauses are measured against the longest lease: a long one
			// outlasts every lease.
			o.model.TTL = slices.Max(o.model.TTLs)
		}
	}
	o.model.RenewEvery = renew
	fk, err := explore.ParseFaults(faults)
	if err != nil {
		return bad("-faults: %v", err)
	}
	o.model.FaultKinds = fk
	if len(fk) == 0 {
		o.model.Faults = 0
	}
	if (slices.Contains(fk, explore.FaultNodeRestart) || slices.Contains(fk, explore.FaultClockJump)) && !o.redlock {
		return bad("-faults: %s and %s strike a node: they go with -redlock", explore.FaultNodeRestart, explore.FaultClockJump)
	}
	if jump != 0 && !slices.Contains(fk, explore.FaultClockJump) {
		return bad("-jump goes with -faults clock-jump")
	}
	o.model.Jump = jump
	if bound != "" {
		for kv := range strings.SplitSeq(bound, ",") {
			k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
			n, err := strconv.Atoi(v)
			if !ok || err != nil {
				return bad("-bound %q: want iterations=N,attempts=N,faults=N,ticks=N,steps=N", bound)
			}
			bounds := map[string]*int{"iterations": &o.model.Iterations, "attempts": &o.model.Attempts,
				"faults": &o.model.Faults, "ticks": &o.model.Ticks, "steps": &o.model.Steps}
			field, known := bounds[k]
			if !known {
				return bad("-bound: unknown bound %q (want iterations, attempts, faults, ticks, steps)", k)
			}
			*field = n
		}
	}
	if check != "" && check != "all" {
		for p := range strings.SplitSeq(check, ",") {
			p = strings.TrimSpace(p)
			if !slices.Contains(explore.Properties, p) {
				return bad("-check: unknown property %q (want %s)", p, strings.Join(explore.Properties, ", "))
			}
			o.check = append(o.check, p)
		}
	} else if check == "all" {
		o.check = explore.Properties
	}
	if o.mode != "exhaustive" && o.mode != "random" && o.mode != "pct" {
		return bad("-mode %q: want exhaustive, random or pct", o.mode)
	}
	if o.depth < 1 || o.depth > 10 {
		return bad("-depth %d: want 1 to 10", o.depth)
	}
	if o.clients != 0 {
		o.model.Clients = o.clients
	}
	probe := o.model
	probe.Clients = max(probe.Clients, 2)
	if err := probe.Validate(); err != nil {
		return bad("%v", err)
	}
	return o, nil
}

// errExploreFound is returned when the search found a violation (exit 1).
var errExploreFound = errors.New("a property was found broken")

// exploreDoc is the JSON output.
type exploreDoc struct {
	Target        string          `json:"target"`
	About         string          `json:"about"`
	Schedules     int             `json:"schedules"`
	Pruned        int             `json:"pruned"`
	Diverged      int             `json:"diverged"`
	Reruns        int             `json:"reruns"`
	Exhaustive    bool            `json:"exhaustive"`
	Stopped       string          `json:"stopped"`
	BudgetS       float64         `json:"budget_s,omitempty"`
	Dilation      int64           `json:"dilation"`
	ElapsedS      float64         `json:"elapsed_s"`
	SchedulesPerS float64         `json:"schedules_per_s"`
	Mode          string          `json:"mode"`
	Seed          *uint64         `json:"seed,omitempty"`
	Model         modelDoc        `json:"model"`
	Checked       []string        `json:"checked"`
	Violations    []violationDoc  `json:"violations"`
	Counter       *counterexample `json:"counterexample"`
	Unsteady      []unsteadyDoc   `json:"unsteady"`
	schema.Env
	Note string `json:"note"`
}

type modelDoc struct {
	Clients    int      `json:"clients"`
	Iterations int      `json:"iterations"`
	Attempts   int      `json:"attempts"`
	Faults     int      `json:"faults_per_schedule"`
	Ticks      int      `json:"ticks_per_schedule"`
	Steps      int      `json:"steps_per_client"`
	FaultKinds []string `json:"faults"`
	Nodes      int      `json:"nodes,omitempty"`
	JumpMS     int64    `json:"clock_jump_ms,omitempty"`
	TTLMS      int64    `json:"ttl_ms"`
	TTLsMS     []int64  `json:"ttls_ms,omitempty"`
	RenewMS    int64    `json:"renew_every_ms,omitempty"`
	RetryMS    int64    `json:"retry_ms"`
	ShortMS    int64    `json:"pause_short_ms"`
	LongMS     int64    `json:"pause_long_ms"`
}

type violationDoc struct {
	Property string `json:"property"`
	Message  string `json:"message"`
	Steps    int    `json:"steps"`
}

// unsteadyDoc is a violation the search found whose schedule did not
// break the property again on a fresh server, twice: not counted.
type unsteadyDoc struct {
	Property   string           `json:"property"`
	Message    string           `json:"message"`
	Steps      []explore.Step   `json:"steps"`
	Actions    []explore.Action `json:"actions"`
	ReplayNote string           `json:"replay_note"`
}

type counterexample struct {
	Property   string           `json:"property"`
	Steps      []explore.Step   `json:"steps"`
	Actions    []explore.Action `json:"actions"`
	Reproduced bool             `json:"reproduced"`
	Server     string           `json:"redis_server,omitempty"`
	ReplayNote string           `json:"replay_note,omitempty"`
}

// exploreNote states how time is kept in every run.
var exploreNote = fmt.Sprintf("Time is virtual and dilated: every duration the code under test and the server see (the "+
	"lease, the retry wait, each shortening of the leases when the clock advances, the clients' clock) is the virtual "+
	"one times %d, so a stall of the machine of S moves a lease by S/%d of virtual time. Constants in the code "+
	"under test (a 1 ms backoff) shrink by as much. Times shown are virtual.", explore.Dilation, explore.Dilation)

// nodesNote states how the nodes of a target of several are modelled.
const nodesNote = "The nodes are the N logical databases of the one redis-server that follow the explorer's own " +
	"(1 to N by default; the shared counter stays in the explorer's): a node-restart deletes a node's keys, as a " +
	"restart without persistence loses them; a clock-jump shortens every lease on one node by the jump, while the " +
	"clients' clock does not move."

func runExplore(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseExploreFlags(args, stderr)
	if err != nil {
		return err
	}
	var t *explore.Target
	switch {
	case o.recipe != "":
		t, err = explore.Recipe(o.recipe, o.fixed)
	case o.strategy != "":
		t, err = explore.Strategy(market.Strategy(o.strategy), o.fencing)
	case o.watchdog:
		t = explore.Watchdog()
	case o.redlock:
		t, err = explore.Redlock(o.nodes)
	case o.manifest != nil:
		t = o.manifest
	default:
		t, err = explore.Lua(o.lua)
	}
	if err != nil {
		return usagef(stderr, "simulate explore", "%v", err)
	}
	if o.clients == 0 {
		o.model.Clients = t.Clients
	}
	o.model = o.model.Resolve()
	conn, err := openRedis(ctx, "simulate explore", o.redis, stderr)
	if err != nil {
		return err
	}
	defer conn.Close()
	base, ok := conn.Client.(*redis.Client)
	if !ok {
		return usagef(stderr, "simulate explore", "-redis: the explorer needs one server, not a cluster")
	}
	e, err := explore.New(ctx, base, t, o.model)
	if errors.Is(err, explore.ErrManifest) {
		fmt.Fprintf(stderr, "simulate explore: %v\n", err)
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if errors.Is(err, explore.ErrBadScript) {
		return usagef(stderr, "simulate explore", "%v", err)
	}
	if err != nil {
		return err
	}
	defer e.Close()
	opts := explore.Options{Mode: o.mode, Seed: o.seed, Schedules: o.runs, Depth: o.depth, NoReduction: o.noReduce, Check: o.check,
		Workers: o.workers, Budget: o.budget,
		Progress: func(p explore.Progress) {
			fmt.Fprintf(stderr, "explore: %d schedules, %.0f s, found: %s\n", p.Schedules, p.Elapsed.Seconds(),
				orNone(p.Found))
		}}
	opts.StopAtFirst = o.first
	if exploreStarting != nil {
		exploreStarting()
	}
	res, err := e.Explore(ctx, opts)
	if errors.Is(err, explore.ErrTarget) {
		return usagef(stderr, "simulate explore", "%v", err)
	}
	if err != nil {
		return err
	}
	if res.Stopped != "" {
		fmt.Fprintf(stderr, "explore: stopped (%s) after %d schedules, %.0f s; found: %s\n", res.Stopped, res.Schedules,
			res.Elapsed.Seconds(), orNone(propertiesOf(res.Violations)))
	}
	// What is left runs even once ctx has ended (a budget, Ctrl-C), for a
	// few seconds at most: the result is printed whatever stopped it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reportBound)
	defer cancel()
	doc := exploreDoc{Target: res.Target, About: res.About, Schedules: res.Schedules, Pruned: res.Pruned, Diverged: res.Diverged, Reruns: res.Reruns,
		Exhaustive: res.Exhaustive, Stopped: res.Stopped, BudgetS: o.budget.Seconds(), Dilation: explore.Dilation,
		ElapsedS: res.Elapsed.Seconds(), Mode: res.Mode, Checked: res.Checked,
		Model: modelDoc{Clients: o.model.Clients, Iterations: o.model.Iterations, Attempts: o.model.Attempts,
			Faults: o.model.Faults, Ticks: o.model.Ticks, Steps: o.model.Steps, FaultKinds: nonNil(o.model.FaultKinds), TTLMS: o.model.TTL.Milliseconds(),
			RetryMS: o.model.Retry.Milliseconds(), ShortMS: (o.model.TTL / 2).Milliseconds(),
			LongMS: (o.model.TTL * 3 / 2).Milliseconds(), Nodes: t.Nodes()},
		Violations: []violationDoc{}, Unsteady: []unsteadyDoc{}, Env: conn.Env(), Note: exploreNote}
	if slices.Contains(o.model.FaultKinds, explore.FaultClockJump) {
		doc.Model.JumpMS = o.model.Jump.Milliseconds()
	}
	for _, d := range o.model.TTLs {
		doc.Model.TTLsMS = append(doc.Model.TTLsMS, d.Milliseconds())
	}
	doc.Model.RenewMS = o.model.RenewEvery.Milliseconds()
	if t.Nodes() > 0 {
		doc.Note += " " + nodesNote
	}
	if res.Mode == "random" || res.Mode == "pct" {
		doc.Seed = &o.seed
	}
	if res.Elapsed > 0 {
		doc.SchedulesPerS = float64(res.Schedules+res.Pruned) / res.Elapsed.Seconds()
	}
	var main *explore.Found
	for i, f := range res.Violations {
		doc.Violations = append(doc.Violations, violationDoc{Property: f.Property, Message: f.Message, Steps: len(f.Steps)})
		if main == nil || f.Property == t.Property {
			main = &res.Violations[i]
		}
	}
	for _, f := range res.Unsteady {
		doc.Unsteady = append(doc.Unsteady, unsteadyDoc{Property: f.Property, Message: f.Message, Steps: f.Steps,
			Actions: f.Actions, ReplayNote: f.ReplayNote})
	}
	var rep explore.Reproduction
	if main != nil {
		rep = explore.Reproduction{Reproduced: main.Reproduced, Server: main.Server, Note: main.ReplayNote, Timeline: main.Replay}
		doc.Counter = &counterexample{Property: main.Property, Steps: main.Steps, Actions: main.Actions,
			Reproduced: rep.Reproduced, Server: rep.Server, ReplayNote: rep.Note}
	}
	if o.out != "" {
		files, err := writeExploreTimelines(ctx, e, o.out, res, main, rep)
		if err != nil {
			return err
		}
		wrote := "nothing (no violation to show)"
		if len(files) > 0 {
			wrote = strings.Join(files, ", ")
		}
		fmt.Fprintln(stderr, schema.Wrap(fmt.Sprintf("simulate explore: wrote %s into %s", wrote, o.out), schema.Width))
	}
	if o.format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(doc); err != nil {
			return err
		}
	} else if err := writeExploreTable(stdout, doc, main, rep, o.verbose); err != nil {
		return err
	}
	if len(res.Violations) > 0 {
		return fmt.Errorf("explore: %w: %s", errExploreFound, strings.Join(propertiesOf(res.Violations), ", "))
	}
	return nil
}

// reportBound is how long writing the timelines of a search's findings
// may take once the search has returned.
const reportBound = 10 * time.Second

// exploreStarting, when set (by tests), is called just before the search
// starts.
var exploreStarting func()

func orNone(ps []string) string {
	if len(ps) == 0 {
		return "nothing yet"
	}
	return strings.Join(ps, ", ")
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func propertiesOf(fs []explore.Found) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Property)
	}
	return out
}

func writeExploreTable(w io.Writer, doc exploreDoc, main *explore.Found, rep explore.Reproduction, verbose bool) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\n", schema.Wrap(fmt.Sprintf("explore: %s — %s", doc.Target, doc.About), schema.Width))
	m := doc.Model
	faults := "no faults"
	if m.Faults > 0 && len(m.FaultKinds) > 0 {
		faults = fmt.Sprintf("at most %d fault(s) per schedule of %s", m.Faults, strings.Join(m.FaultKinds, ", "))
	}
	nodes := ""
	if m.Nodes > 0 {
		nodes = fmt.Sprintf(" on %d nodes", m.Nodes)
		if m.Nodes == 1 {
			nodes = " on 1 node"
		}
	}
	if m.JumpMS > 0 {
		faults += fmt.Sprintf(" (a clock jumps %s)", msText(m.JumpMS))
	}
	lease := "lease " + msText(m.TTLMS)
	if len(m.TTLsMS) > 0 {
		var ls []string
		for i := range m.Clients {
			ls = append(ls, fmt.Sprintf("%c %s", 'A'+i, msText(m.TTLsMS[min(i, len(m.TTLsMS)-1)])))
		}
		lease = "leases " + strings.Join(ls, ", ")
	}
	if m.RenewMS > 0 {
		lease += ", renewed every " + msText(m.RenewMS)
	}
	fmt.Fprintf(&b, "%s\n", schema.Wrap(fmt.Sprintf("model: %d clients%s, %d critical section(s) each, %d attempt(s) at "+
		"the lock per section, at most %d commands per client, %s, at most %d advance(s) of the clock; %s, "+
		"retry %s, pauses short %s / long %s / forever (virtual time)",
		m.Clients, nodes, m.Iterations, m.Attempts, m.Steps, faults, m.Ticks, lease, msText(m.RetryMS),
		msText(m.ShortMS), msText(m.LongMS)), schema.Width))
	fmt.Fprintf(&b, "checked: %s\n", strings.Join(doc.Checked, ", "))
	cover := "yes, every schedule within the bounds"
	if !doc.Exhaustive {
		cover = "no"
		switch {
		case doc.Stopped != "":
			cover = "no (cut short: " + doc.Stopped + ")"
		case doc.Mode == "exhaustive":
			cover = "no (stopped early)"
		}
	}
	fmt.Fprintf(&b, "%s\n", schema.Wrap(fmt.Sprintf("search: %s, %d schedules (%d more cut by the reduction), %.1f s, "+
		"%.0f schedules/s; exhaustive: %s", doc.Mode, doc.Schedules, doc.Pruned, doc.ElapsedS, doc.SchedulesPerS, cover),
		schema.Width))
	switch doc.Stopped {
	case explore.StoppedBudget:
		fmt.Fprintf(&b, "%s\n", schema.Wrap(fmt.Sprintf("The search was cut short: its budget of %v ran out. What it "+
			"found so far follows; the schedules it did not run may break more.", time.Duration(doc.BudgetS*float64(time.Second))),
			schema.Width))
	case explore.StoppedInterrupted:
		fmt.Fprintf(&b, "%s\n", schema.Wrap("The search was cut short: it was interrupted. What it found so far "+
			"follows; the schedules it did not run may break more.", schema.Width))
	}
	if doc.Diverged > 0 {
		fmt.Fprintf(&b, "%d replays did not follow their prefix (the code did something the scheduler does not order)\n",
			doc.Diverged)
	}
	if doc.Reruns > 0 {
		fmt.Fprintf(&b, "%d runs were run again: the machine stalled longer than a lease's margin (the lease ran out "+
			"on the server's real time)\n", doc.Reruns)
	}
	fmt.Fprintf(&b, "redis: %s %s\n", doc.Redis.Mode, doc.Redis.Version)
	if len(doc.Violations) == 0 {
		if doc.Stopped != "" {
			fmt.Fprintf(&b, "\nNo violation of %s found before the search was cut short.\n", strings.Join(doc.Checked, ", "))
		} else {
			fmt.Fprintf(&b, "\nNo violation of %s.\n", strings.Join(doc.Checked, ", "))
		}
	} else {
		fmt.Fprintln(&b, "\nviolations:")
		for _, v := range doc.Violations {
			fmt.Fprintf(&b, "%s\n", schema.Wrap(fmt.Sprintf("  %s: %s (%d steps)", v.Property, v.Message, v.Steps), schema.Width))
		}
	}
	if len(doc.Unsteady) > 0 {
		fmt.Fprintf(&b, "\n%s\n", schema.Wrap("unsteady (found by the search, but not broken again when its schedule "+
			"was replayed on a fresh server, twice; not counted as a violation):", schema.Width))
		for _, u := range doc.Unsteady {
			fmt.Fprintf(&b, "%s\n", schema.Wrap(fmt.Sprintf("  %s: %s (%d steps; %s)", u.Property, u.Message, len(u.Steps),
				u.ReplayNote), schema.Width))
			var acts []string
			for _, a := range u.Actions {
				acts = append(acts, a.String())
			}
			fmt.Fprintf(&b, "%s\n", schema.Wrap("  schedule: "+strings.Join(acts, "; "), schema.Width))
		}
	}
	if main != nil {
		repro := "reproduced on redis-server " + rep.Server
		if rep.Server == "" {
			repro = "reproduced: " + rep.Note
		}
		if !rep.Reproduced {
			repro = "NOT reproduced on a fresh redis-server: " + rep.Note
		}
		fmt.Fprintf(&b, "\ncounterexample (%s, %d steps; %s):\n", main.Property, len(main.Steps), repro)
		if verbose || rep.Timeline.Events == nil {
			for i, s := range main.Steps {
				mark := ""
				if s.Violation != "" {
					mark = "  !! " + s.Violation
				}
				text := s.Text
				if s.Action.Kind == explore.Run {
					text = s.Action.Client + ": " + text
				}
				fmt.Fprintf(&b, "%3d  %-9s %s%s\n", i+1, explore.FmtMS(s.ClockMS), text, mark)
			}
		}
		if rep.Timeline.Events != nil {
			fmt.Fprintln(&b)
			if err := rep.Timeline.Text(&b, timelineWidth, false); err != nil {
				return err
			}
		}
	}
	fmt.Fprintf(&b, "\n%s\n", schema.Wrap(doc.Note, schema.Width))
	_, err := w.Write(b.Bytes())
	return err
}

func msText(ms int64) string { return (time.Duration(ms) * time.Millisecond).String() }

// writeExploreTimelines writes each counterexample's timeline as SVG and
// text: the main one as replayed on a fresh server, the others replayed on
// the explorer's server. It returns the names of the files written.
func writeExploreTimelines(ctx context.Context, e *explore.Explorer, dir string, res *explore.Result, main *explore.Found, rep explore.Reproduction) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var files []string
	for _, f := range res.Violations {
		tl := rep.Timeline
		if main == nil || f.Property != main.Property || tl.Events == nil {
			var err error
			if tl, _, err = e.Record(ctx, f.Actions); err != nil {
				return files, err
			}
		}
		base := filepath.Join(dir, strings.ReplaceAll(res.Target, " ", "-")+"-"+f.Property)
		var svg, txt bytes.Buffer
		if err := tl.SVG(&svg); err != nil {
			return files, err
		}
		if err := tl.Text(&txt, timelineWidth, false); err != nil {
			return files, err
		}
		if err := os.WriteFile(base+".svg", svg.Bytes(), 0o644); err != nil {
			return files, err
		}
		files = append(files, filepath.Base(base)+".svg")
		if err := os.WriteFile(base+".txt", txt.Bytes(), 0o644); err != nil {
			return files, err
		}
		files = append(files, filepath.Base(base)+".txt")
	}
	return files, nil
}
