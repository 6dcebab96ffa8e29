package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/explore/sched"
	"github.com/lockmarket/lockmarket/internal/explore/search"
	"github.com/lockmarket/lockmarket/internal/explore/targets"
	"github.com/lockmarket/lockmarket/internal/explore/view"
	"github.com/lockmarket/lockmarket/internal/redis/redisconn"
	"github.com/lockmarket/lockmarket/internal/redis/redisserver"
	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/sim/report/progress"
	"github.com/lockmarket/lockmarket/market"
	"github.com/redis/go-redis/v9"
)

// workersPerCore is -workers' default, by core: a worker waits on
// Redis's replies most of its time, and on two cores four workers ended
// both searches of results/explore/speed.txt sooner than two, and six
// no sooner than four (results/explore/workers-speed.txt).
const workersPerCore = 2

// maxWorkers bounds -workers: each worker holds a few connections of its
// own to the one server.
const maxWorkers = 64

const exploreUsage = `usage: simulate explore (-recipe N [-fixed] | -strategy S [-fencing] | -watchdog [-fencing]
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
  holders           more clients than a semaphore has permits hold leases that have not run
                    out (-recipe-dir with "lock": "semaphore": its mutual_exclusion)
  resource          the counter lost an update, or a reader saw a write half done
  liveness          a lock without expiry that no live client holds keeps a client waiting
                    (for a recipe: any key it wrote without expiry, after every lease ran out)
  ownership         a release or extension answered as a success once the hold had ended
                    (-recipe-dir and Lua scripts)
  lease             a command left the lock's key to live longer than the lease asked for
                    (-recipe-dir and Lua scripts)

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
keys and arguments, and which replies mean success (see docs/explorer.md;
examples: examples/recipes/). Its steps may send data commands on its own
keys only, but its scripts run on the server as written: explore a recipe
you did not write on the default private server (-redis auto), not on one
others use.

Time is virtual, and dilated: every duration the code and the server see
is the virtual one times 1,000,000 (a Lua script's ARGV[2] for a 10s lease
is 10000000000), so the machine's speed cannot decide a verdict.
-budget D, Ctrl-C or SIGTERM stop the search: it then prints (and -out
writes) what it found so far, says it was cut short, and exits as below.
Exit status: 0 no violation, 1 a violation (replayed), 2 bad input (a flag,
a script that does not parse or answers outside the convention, a manifest
that cannot be used, or one whose search proved nothing: a take that never
succeeded, a release or extension that never did), 3 no violation but no
proof (replays diverged, or a finding was unsteady), 130 interrupted with
nothing found.

Flags:
`

const exploreExample = `
Examples:
  simulate explore -recipe 4
  simulate explore -recipe 6 -fixed -format json
  simulate explore -watchdog -faults pause-short
  simulate explore -watchdog -fencing -faults pause-long -budget 1m
  simulate explore -strategy fine -first
  simulate explore -strategy fine -budget 20s
  simulate explore -strategy fine -fencing -clients 2
  simulate explore -recipe 6 -fixed -clients 3 -shard 0/4 -format json > shard-0.json
  simulate explore -merge shard-0.json shard-1.json shard-2.json shard-3.json
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
	lua      targets.LuaRecipe
	dir      string
	manifest *sched.Target
	tg       *sched.Target // what is explored
	model    action.Model
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
	shard    search.Shard
}

// exploreFlags are the flags of "simulate explore" that parseExploreFlags
// reads into exploreOptions after the flag package has parsed them.
type exploreFlags struct {
	files                             map[string]*string // the Lua scripts, by flag name
	faults, bound, check, ttls, shard string
	ttl, jump, renew, delay           time.Duration
}

// luaFlags are the flags of the Lua scripts, in order.
var luaFlags = []string{"acquire", "release", "extend", "read-acquire", "read-release", "write-acquire", "write-release"}

func parseExploreFlags(args []string, stderr io.Writer) (exploreOptions, error) {
	f := newCmdFlags("simulate explore", exploreUsage, exploreExample, stderr)
	var o exploreOptions
	fl := exploreFlags{files: map[string]*string{}}
	for _, name := range luaFlags {
		fl.files[name] = f.String(name, "", "Lua `FILE`: the "+strings.ReplaceAll(name, "-", " ")+" script")
	}
	defineExploreTargetFlags(f, &o, &fl)
	defineExploreSearchFlags(f, &o, &fl)
	if err := f.Read(args); err != nil {
		return o, err
	}
	if o.budget < 0 {
		return o, f.Bad("-budget %v: want 0 (none) or more", o.budget)
	}
	if o.workers < 1 || o.workers > maxWorkers {
		return o, f.Bad("-workers %d: want 1 to %d", o.workers, maxWorkers)
	}
	for _, step := range []func(*cmdFlags, exploreFlags) error{o.readTarget, o.readModel, o.readSearch} {
		if err := step(f, fl); err != nil {
			return o, err
		}
	}
	return o, nil
}

// defineExploreTargetFlags defines the flags that say what is explored
// and within which model.
func defineExploreTargetFlags(f *cmdFlags, o *exploreOptions, fl *exploreFlags) {
	f.redis(&o.redis, "the explorer needs one server, not a cluster")
	f.StringVar(&o.recipe, "recipe", "", "explore gallery recipe `N` ("+strings.Join(targets.Recipes(), ", ")+")")
	f.BoolVar(&o.fixed, "fixed", false, "explore the recipe's fix instead")
	f.StringVar(&o.strategy, "strategy", "", "explore the market under strategy `S` (watch, coarse, fine, lua)")
	f.BoolVar(&o.fencing, "fencing", false, "with -strategy: the market's locks fence their commits (market.WithFencing); "+
		"with -watchdog: the write commits only while the lock key holds the writer's token")
	f.BoolVar(&o.watchdog, "watchdog", false, "explore locking.Mutex renewed by a watchdog (locking.KeepAlive), no fencing "+
		"unless -fencing")
	f.BoolVar(&o.redlock, "redlock", false, "explore locking.RedlockMutex over several nodes, no fencing")
	f.IntVar(&o.nodes, "nodes", 0, fmt.Sprintf("with -redlock: `N` nodes, 1 to %d: logical databases 1 to N of the server "+
		"(default %d)", sched.MaxNodes, targets.DefaultNodes))
	f.DurationVar(&fl.jump, "jump", 0, "with -faults clock-jump: how far a node's clock jumps forward (default: one lease)")
	f.IntVar(&o.clients, "clients", 0, "clients, 2 to 4 (default: the target's, 3 where the failure needs a third)")
	f.DurationVar(&fl.ttl, "ttl", 10*time.Second, "the lease (virtual time; 1s to 10m)")
	f.StringVar(&o.dir, "recipe-dir", "", "explore the recipe in `DIR`: DIR/recipe.json says how each operation is called")
	f.StringVar(&fl.ttls, "ttls", "", "a lease per client, in order, as `D,D,...` (10s,3s); clients past the list take "+
		"its last (default: -ttl for every client)")
	f.DurationVar(&fl.renew, "renew-every", 0, "each holder extends its hold every `D` of virtual time while it holds "+
		"it, as a watchdog does, instead of once (a target with an extension)")
	f.DurationVar(&fl.delay, "max-delay", 0, "bound the network's delay: a command sent runs within `D` of virtual "+
		"time (default: unbounded, a command may land any time later)")
	f.StringVar(&fl.faults, "faults", "pause,crash", "faults that may strike: "+strings.Join(action.FaultNames(), ", ")+", none")
	f.StringVar(&fl.bound, "bound", "", "bounds `iterations=N,attempts=N,faults=N,ticks=N,steps=N`: critical sections per "+
		"client (1), attempts at the lock per section (2; 1 with 3 clients or more), faults per schedule (1), "+
		"advances of the clock per schedule (3), commands per client per schedule (10)")
}

// defineExploreSearchFlags defines the flags that say how the search
// runs and what it prints.
func defineExploreSearchFlags(f *cmdFlags, o *exploreOptions, fl *exploreFlags) {
	f.StringVar(&fl.check, "check", "", "properties to check, comma-separated, or all (default: the target's)")
	f.StringVar(&o.mode, "mode", "exhaustive", "exhaustive (every schedule within the bounds), random (random walks) or pct (random priorities)")
	f.seed(&o.seed, "the random and pct modes' schedules")
	f.IntVar(&o.runs, "schedules", 2000, "random and pct modes: how many schedules")
	f.IntVar(&o.depth, "depth", 3, "pct mode: the bug depth `d` (d-1 changes of priority per schedule), 1 to 10")
	f.BoolVar(&o.first, "first", false, "stop at the first violation (the search is then not exhaustive)")
	f.BoolVar(&o.noReduce, "no-reduction", false, "explore commuting steps in every order too")
	f.DurationVar(&o.budget, "budget", 0, "stop the search after `D` (0: none) and report what it found; Ctrl-C too")
	f.IntVar(&o.workers, "workers", min(workersPerCore*runtime.GOMAXPROCS(0), maxWorkers),
		"exhaustive search for every violation: schedules run at once, `N` 1 to 64 (same result; "+
			"default: twice the cores)")
	f.format(&o.format, "table", "json")
	f.StringVar(&fl.shard, "shard", "", "search only part `i/N` of the schedules, i from 0 "+
		"to N-1: N runs, anywhere, search them all; combine their -format json results "+
		"with simulate explore -merge")
	f.Bool("merge", false, "combine the JSON results of a search's shards, given as arguments "+
		"(simulate explore -merge -h)")
	f.out(&o.out, "each counterexample's timeline (SVG and text)")
	f.verbose(&o.verbose, "each counterexample's steps as well as its timeline")
}

// readTarget checks that exactly one target is given, and reads it: the
// Lua scripts' files, the manifest of -recipe-dir, the flags that go with
// one target only.
func (o *exploreOptions) readTarget(f *cmdFlags, fl exploreFlags) error {
	given := 0
	if o.recipe != "" {
		given++
		if !slices.Contains(targets.Recipes(), o.recipe) {
			return f.Bad("-recipe %q: want one of %s", o.recipe, strings.Join(targets.Recipes(), ", "))
		}
	}
	if o.strategy != "" {
		given++
		if _, err := market.ParseStrategy(o.strategy); err != nil {
			return f.Bad("-strategy %q: want one of watch, coarse, fine, lua", o.strategy)
		}
	}
	lua, err := o.readLua(f, fl.files)
	if err != nil {
		return err
	}
	for _, set := range []bool{o.watchdog, o.redlock, lua, o.dir != ""} {
		if set {
			given++
		}
	}
	if given != 1 {
		return f.Bad("give exactly one target: -recipe N, -strategy S, -watchdog, -redlock, Lua scripts, or -recipe-dir DIR")
	}
	if o.dir != "" {
		t, err := targets.LoadRecipe(o.dir)
		if err != nil {
			return badManifest(f.Output(), err)
		}
		o.manifest = t
	}
	if err := o.checkTargetFlags(f); err != nil {
		return err
	}
	t, err := o.target()
	if err != nil {
		return f.Bad("%v", err)
	}
	o.tg = t
	return nil
}

// readLua reads the Lua scripts named by their flags, and reports whether
// any was given.
func (o *exploreOptions) readLua(f *cmdFlags, files map[string]*string) (bool, error) {
	scripts := map[string]*targets.Script{
		"acquire": &o.lua.Acquire, "release": &o.lua.Release, "extend": &o.lua.Extend,
		"read-acquire": &o.lua.ReadAcquire, "read-release": &o.lua.ReadRelease,
		"write-acquire": &o.lua.WriteAcquire, "write-release": &o.lua.WriteRelease,
	}
	lua := false
	for _, name := range luaFlags {
		p := *files[name]
		if p == "" {
			continue
		}
		lua = true
		src, err := targets.ReadScript(p)
		if err != nil {
			return false, f.Bad("-%s: %v", name, err)
		}
		*scripts[name] = targets.Script{Name: p, Source: src}
	}
	return lua, nil
}

// checkTargetFlags refuses the flags that go with another target, and
// sets -nodes's default.
func (o *exploreOptions) checkTargetFlags(f *cmdFlags) error {
	if o.fixed && o.recipe == "" {
		return f.Bad("-fixed goes with -recipe")
	}
	if o.fencing && o.strategy == "" && !o.watchdog {
		return f.Bad("-fencing goes with -strategy or -watchdog")
	}
	if o.nodes != 0 && !o.redlock {
		return f.Bad("-nodes goes with -redlock")
	}
	if o.redlock && o.nodes == 0 {
		o.nodes = targets.DefaultNodes
	}
	if o.redlock && (o.nodes < 1 || o.nodes > sched.MaxNodes) {
		return f.Bad("-nodes %d: must be 1 to %d", o.nodes, sched.MaxNodes)
	}
	return nil
}

// readModel reads the model: the leases, their renewal, the network's
// delay, the faults and the bounds.
func (o *exploreOptions) readModel(f *cmdFlags, fl exploreFlags) error {
	o.model = action.DefaultModel()
	o.model.TTL = fl.ttl
	if fl.ttls != "" {
		ttls, err := action.ParseLeases(fl.ttls)
		if err != nil {
			return f.Bad("-ttls %q: want leases such as 10s,3s", fl.ttls)
		}
		o.model.TTLs = ttls
		if !f.Given("ttl") {
			// Pauses are measured against the longest lease: a long one
			// outlasts every lease.
			o.model.TTL = slices.Max(o.model.TTLs)
		}
	}
	o.model.RenewEvery = fl.renew
	if err := action.CheckDelay(fl.delay); err != nil {
		return f.Bad("-max-delay %v: %v", fl.delay, err)
	}
	o.model.MaxDelay = fl.delay
	if err := o.readFaults(f, fl); err != nil {
		return err
	}
	switch err := action.ParseBounds(fl.bound, &o.model); {
	case errors.Is(err, action.ErrBoundForm):
		return f.Bad("-bound %q: want iterations=N,attempts=N,faults=N,ticks=N,steps=N", fl.bound)
	case err != nil:
		return f.Bad("-bound: %v", err)
	}
	return nil
}

// readFaults reads the faults that may strike, and the clock jump's
// length.
func (o *exploreOptions) readFaults(f *cmdFlags, fl exploreFlags) error {
	fk, err := action.ParseFaults(fl.faults)
	if err != nil {
		return f.Bad("-faults: %v", err)
	}
	o.model.FaultKinds = fk
	if len(fk) == 0 {
		o.model.Faults = 0
	}
	if (slices.Contains(fk, action.FaultNodeRestart) || slices.Contains(fk, action.FaultClockJump)) && !o.redlock {
		return f.Bad("-faults: %s and %s strike a node: they go with -redlock", action.FaultNodeRestart, action.FaultClockJump)
	}
	if fl.jump != 0 && !slices.Contains(fk, action.FaultClockJump) {
		return f.Bad("-jump goes with -faults clock-jump")
	}
	o.model.Jump = fl.jump
	return nil
}

// readSearch reads the properties to check and the search's mode, and
// makes the model the target's (action.Model.For): the clients given, or
// the target's, checked, with every default filled in.
func (o *exploreOptions) readSearch(f *cmdFlags, fl exploreFlags) error {
	check, err := result.ParseProperties(fl.check)
	if err != nil {
		return f.Bad("-check: %v", err)
	}
	o.check = check
	if _, err := sched.ParseMode(o.mode); err != nil || o.mode == "" {
		return f.Bad("-mode %q: want exhaustive, random or pct", o.mode)
	}
	if err := o.readShard(f, fl.shard); err != nil {
		return err
	}
	if o.depth < 1 || o.depth > 10 {
		return f.Bad("-depth %d: want 1 to 10", o.depth)
	}
	if o.clients != 0 {
		o.model.Clients = o.clients
	}
	m, err := o.model.For(o.tg.Clients)
	if err != nil {
		return f.Bad("%v", err)
	}
	o.model = m
	return nil
}

// exploreGCPercent is the garbage collector's target (GOGC) of a
// "simulate explore" process: each step of a search allocates its
// texts afresh, and at the default of 100 the collector's work is a
// large share of the process's processor time
// (results/explore/profile.txt); the heap a search keeps (its state
// cache) is small beside a machine's memory.
const exploreGCPercent = 400

// exploreGC sets the collector's target for "simulate explore", unless
// GOGC is set.
func exploreGC(args []string) {
	if len(args) > 0 && args[0] == "explore" && os.Getenv("GOGC") == "" {
		debug.SetGCPercent(exploreGCPercent)
	}
}

// errExploreFound is returned when the search found a violation (exit 1).
var errExploreFound = errors.New("a property was found broken")

// runExplore is "simulate explore".
func runExplore(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if isMerge(args) {
		return runMerge(args, stdout, stderr)
	}
	o, err := parseExploreFlags(args, stderr)
	if err != nil {
		return err
	}
	t := o.tg
	conn, err := openExploreRedis(ctx, o.redis, t, stderr)
	if err != nil {
		return err
	}
	defer conn.Close()
	e, err := newExplorer(ctx, conn, t, o.model, stderr)
	if err != nil {
		return err
	}
	defer e.Close()
	if exploreStarting != nil {
		exploreStarting()
	}
	// A recipe refused a command is bad input: the search stops at the
	// next progress line.
	sctx, stopSearch := context.WithCancel(ctx)
	defer stopSearch()
	res, err := e.Explore(sctx, o.searchOptions(stderr, func() {
		if rs, _ := refusals(ctx, conn); len(rs) > 0 {
			stopSearch()
		}
	}))
	if rerr := refused(ctx, conn, stderr); rerr != nil {
		return rerr
	}
	if err := searchFailure(err, stderr); err != nil {
		return err
	}
	if res.Stopped != "" {
		fmt.Fprintf(stderr, "explore: stopped (%s) after %s, %.0f s; found: %s\n", res.Stopped,
			output.Plural(res.Schedules, "schedule"), res.Elapsed.Seconds(), orNone(propertiesOf(res.Violations)))
	}
	// What is left runs even once ctx has ended (a budget, Ctrl-C), for a
	// few seconds at most: the result is printed whatever stopped it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reportBound)
	defer cancel()
	if err := o.markShard(res); err != nil {
		return err
	}
	if err := writeExploreResult(ctx, e, res, o, conn.Env(), stdout, stderr); err != nil {
		return err
	}
	return exploreVerdict(res, stderr)
}

// exploreVerdict is the error a search's result exits with: nil (0), a
// violation (1), a verdict that proves nothing (2), no proof (3), or an
// interruption with nothing found (130).
func exploreVerdict(res *result.Result, stderr io.Writer) error {
	if err := res.Vacuous(); err != nil {
		// Nothing the search was about happened: its verdict proves
		// nothing, and the manifest is to blame (exit 2).
		fmt.Fprintln(stderr, output.Wrap("simulate explore: "+err.Error(), output.Width))
		return fmt.Errorf("%w: %v", output.ErrUsage, err)
	}
	if len(res.Violations) > 0 {
		return fmt.Errorf("explore: %w: %s", errExploreFound, strings.Join(propertiesOf(res.Violations), ", "))
	}
	if res.Stopped == result.StoppedInterrupted {
		return fmt.Errorf("explore: %w after %s, nothing found", progress.ErrInterrupted, output.Plural(res.Schedules, "schedule"))
	}
	if res.Diverged > 0 || len(res.Unsteady) > 0 {
		return fmt.Errorf("explore: %w: %s diverged, %s", errExploreInconclusive, output.Plural(res.Diverged, "replay"),
			output.Plural(len(res.Unsteady), "unsteady finding"))
	}
	return nil
}

// errExploreInconclusive is returned when the search found no violation
// but is no proof either: replays diverged, or a finding did not break
// its property again when replayed (exit 3).
var errExploreInconclusive = errors.New("no violation found, but the search is not a proof")

// openExploreRedis opens the server the explorer of t runs on: for a
// recipe (-recipe-dir, Lua scripts), whose scripts are code the explorer
// does not read, with -redis auto, a confined private redis-server
// (redisconn.OpenConfined), never REDIS_URL; with a server named, that
// server, said to be unconfined.
func openExploreRedis(ctx context.Context, spec string, t *sched.Target, stderr io.Writer) (*redisconn.Conn, error) {
	if t.Lock == nil || t.Lock.Ops == nil {
		return openRedis(ctx, "simulate explore", spec, stderr)
	}
	conn, err := redisconn.OpenConfined(ctx, spec, redisserver.DefaultConfinement, stderr)
	switch {
	case errors.Is(err, redisconn.ErrSpec), errors.Is(err, redisconn.ErrNoConfined):
		return nil, output.Usagef(stderr, "simulate explore", "%v", err)
	case err != nil:
		return nil, err
	}
	if conn.Server == nil {
		fmt.Fprintln(stderr, output.Wrap("simulate explore: the recipe's scripts run on the server -redis names, "+
			"unconfined: run a recipe you did not write with -redis auto", output.Width))
	}
	return conn, nil
}

// searchFailure is the error the search's err exits with: a usage error
// (exit 2), said on stderr, when the code under test did what cannot be
// explored, or ran a script that does not end.
func searchFailure(err error, stderr io.Writer) error {
	if errors.Is(err, sched.ErrTarget) || errors.Is(err, sched.ErrOutside) ||
		errors.Is(err, targets.ErrKeyOutside) || errors.Is(err, sched.ErrWallClock) {
		// The code under test did what cannot be explored: bad input,
		// but not a mistake in the command line.
		fmt.Fprintln(stderr, output.Wrap("simulate explore: "+err.Error(), output.Width))
		return fmt.Errorf("%w: %v", output.ErrUsage, err)
	}
	if busy(err) {
		// A script that runs until Redis answers BUSY is the code under
		// test's fault: bad input (exit 2), not a violation.
		fmt.Fprintln(stderr, output.Wrap("simulate explore: a script of the code under test ran past Redis's "+
			"busy-script threshold (a loop that never ends?): "+output.Printable(err.Error(), 300), output.Width))
		return fmt.Errorf("%w: a script that does not end", output.ErrUsage)
	}
	return err
}

// busy reports whether err is, or wraps, Redis's BUSY reply: a script
// has run past the server's busy-script threshold.
func busy(err error) bool {
	var reply redis.Error
	return errors.As(err, &reply) && strings.HasPrefix(reply.Error(), "BUSY ")
}

// refused reports, as a usage error (exit 2), the commands the confined
// server refused the code under test: a recipe that tried to reach
// beyond its keys (MIGRATE to another server, FLUSHALL, SELECT, ...),
// even where its script caught the refusal. nil when there is none, or
// the server is not confined.
func refused(ctx context.Context, conn *redisconn.Conn, stderr io.Writer) error {
	rs, err := refusals(ctx, conn)
	if err != nil || len(rs) == 0 {
		// A server that cannot say (busy in a script, lost) is the
		// search's error to report.
		return nil
	}
	var said []string
	for i, r := range rs {
		if i == maxRefusalsSaid {
			said = append(said, fmt.Sprintf("and %d more", len(rs)-i))
			break
		}
		where := ""
		if r.Context == "lua" {
			where = " in a script"
		}
		said = append(said, fmt.Sprintf("%s%s (%s)", output.Printable(strings.ToUpper(r.Command), 40), where, output.Plural(int(r.Count), "time")))
	}
	msg := "simulate explore: the server refused the recipe " + strings.Join(said, ", ") +
		": a recipe may only run data commands on its own keys; nothing it was refused happened"
	fmt.Fprintln(stderr, output.Wrap(msg, output.Width))
	return fmt.Errorf("%w: the recipe ran commands its server refuses", output.ErrUsage)
}

// refusals are the commands conn's server refused the code under test,
// if it is confined; it asks even once ctx has ended.
func refusals(ctx context.Context, conn *redisconn.Conn) ([]redisserver.Refusal, error) {
	if conn.Server == nil || !conn.Server.Confined() {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reportBound)
	defer cancel()
	return conn.Server.Refusals(ctx)
}

// maxRefusalsSaid is how many kinds of refused command refused names.
const maxRefusalsSaid = 5

// target is the target the flags name.
func (o *exploreOptions) target() (*sched.Target, error) {
	switch {
	case o.recipe != "":
		return targets.Recipe(o.recipe, o.fixed)
	case o.strategy != "":
		return targets.Strategy(market.Strategy(o.strategy), o.fencing)
	case o.watchdog:
		return targets.Watchdog(o.fencing), nil
	case o.redlock:
		return targets.Redlock(o.nodes)
	case o.manifest != nil:
		return o.manifest, nil
	}
	return targets.Lua(o.lua)
}

// newExplorer is the explorer of t within model m on conn's server; a
// cluster, a manifest that cannot be used or a script that does not
// parse is a usage error.
func newExplorer(ctx context.Context, conn *redisconn.Conn, t *sched.Target, m action.Model, stderr io.Writer) (*sched.Explorer, error) {
	base, ok := conn.Client.(*redis.Client)
	if !ok {
		return nil, output.Usagef(stderr, "simulate explore", "-redis: the explorer needs one server, not a cluster")
	}
	control := base.Options()
	if conn.Server != nil && conn.Server.Confined() {
		// The explorer's own commands (KEYS, RESTORE) as the server's
		// administrative user; the recipe's code as the confined one.
		control = conn.Server.AdminOptions()
	}
	if conn.Server != nil {
		// The private server's unix socket: the same server, a shorter
		// round trip for every step. The explorer takes only base's
		// options, and dials its own connections.
		opts := conn.Server.OverSocket(base.Options())
		control = conn.Server.OverSocket(control)
		base = redis.NewClient(opts)
		defer base.Close()
	}
	e, err := sched.NewControlled(ctx, base, control, t, m)
	if errors.Is(err, targets.ErrManifest) {
		return nil, badManifest(stderr, err)
	}
	if errors.Is(err, targets.ErrBadScript) {
		return nil, output.Usagef(stderr, "simulate explore", "%v", err)
	}
	return e, err
}

// badManifest prints a manifest that cannot be used (targets.ErrManifest)
// as one line naming the file, the field and the limit, without the usage
// hint: the command line is not what is wrong. It returns it as a usage
// error, which exits 2.
func badManifest(stderr io.Writer, err error) error {
	msg := strings.Join(strings.Fields(err.Error()), " ")
	fmt.Fprintf(stderr, "simulate explore: %s\n", msg)
	return fmt.Errorf("%w: %s", output.ErrUsage, msg)
}

// searchOptions are the search's options, with a progress line on
// stderr, after which check is called.
func (o *exploreOptions) searchOptions(stderr io.Writer, check func()) sched.Options {
	return sched.Options{Mode: sched.Mode(o.mode), Seed: o.seed, Schedules: o.runs, Depth: o.depth, NoReduction: o.noReduce, Check: o.check,
		Workers: o.workers, Budget: o.budget, StopAtFirst: o.first, Shard: o.shard,
		Progress: func(p sched.Progress) {
			fmt.Fprintf(stderr, "explore: %s, %.0f s, found: %s\n", output.Plural(p.Schedules, "schedule"), p.Elapsed.Seconds(),
				orNone(p.Found))
			check()
		}}
}

// writeExploreResult writes, with -out, the counterexamples' timelines
// into their folder, and then res on stdout in o's format.
func writeExploreResult(ctx context.Context, e *sched.Explorer, res *result.Result, o exploreOptions, env output.Env, stdout, stderr io.Writer) error {
	if o.out != "" {
		files, err := writeExploreTimelines(ctx, e, o.out, res)
		if err != nil {
			return err
		}
		wrote := "nothing (no violation to show)"
		if len(files) > 0 {
			wrote = strings.Join(files, ", ")
		}
		fmt.Fprintln(stderr, output.Wrap(fmt.Sprintf("simulate explore: wrote %s into %s", wrote, o.out), output.Width))
	}
	if o.format == "json" {
		return writeExploreJSON(stdout, res, env)
	}
	return writeExploreTable(stdout, res, env, o.verbose)
}

// reportBound is how long writing the timelines of a search's findings
// may take once the search has returned.
const reportBound = 10 * time.Second

// fileName is name as a file's name: every character but ASCII
// letters, digits, '.', '_' and '-' made '-', so that a recipe's name
// can neither leave the folder nor hide in a listing.
func fileName(name string) string {
	return strings.Map(func(r rune) rune {
		if r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("._-", r)) {
			return r
		}
		return '-'
	}, strings.TrimLeft(name, "."))
}

// exploreStarting, when set (by tests), is called just before the search
// starts.
var exploreStarting func()

func orNone(ps []string) string {
	if len(ps) == 0 {
		return "nothing yet"
	}
	return strings.Join(ps, ", ")
}

func propertiesOf(fs []result.Counterexample) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Property)
	}
	return out
}

// exploreDoc is the document -format json writes: the result's keys
// (result.Result.MarshalJSON), then the environment block (redis,
// machine), as every document of the commands has it.
type exploreDoc struct {
	result.ResultJSON
	output.Env
}

func writeExploreJSON(w io.Writer, res *result.Result, env output.Env) error {
	b, err := json.MarshalIndent(exploreDoc{res.JSON(), env}, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// writeExploreTable writes res for a person, with the Redis it ran on
// after the search's line.
func writeExploreTable(w io.Writer, res *result.Result, env output.Env, verbose bool) error {
	if err := view.WriteSummary(w, res); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "redis: %s\n", env.Redis); err != nil {
		return err
	}
	return view.WriteFindings(w, res, verbose)
}

// writeExploreTimelines writes each counterexample's timeline as SVG and
// text: the main one as replayed on a fresh server, the others replayed on
// the explorer's server. It returns the names of the files written.
func writeExploreTimelines(ctx context.Context, e *sched.Explorer, dir string, res *result.Result) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var files []string
	for _, f := range res.Violations {
		tl := f.Replay
		if tl.Events == nil {
			var err error
			if tl, _, err = e.Record(ctx, f.Actions); err != nil {
				return files, err
			}
		}
		base := fileName(res.Target) + "-" + f.Property
		written, err := tl.WriteFiles(dir, base, output.Width)
		files = append(files, written...)
		if err != nil {
			return files, err
		}
	}
	return files, nil
}
