package sched

// The runtime's types: one schedule's world and its clients, the target
// and its lock, the client's handle, the explorer. Each file above adds
// what they do; each uses only the files below it.

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/redis/go-redis/v9"
)

// world is one schedule's run: the clients, what each is waiting for, and
// the virtual clock.
type world struct {
	// missedScript is set when an EVALSHA met NOSCRIPT: the server had
	// not yet cached a script the clients use, so this run saw a step
	// the runs after it will not (errScriptMissed).
	missedScript bool
	Target       *Target
	Epoch        time.Time
	signal       chan struct{}
	// Factor is the dilation of time (Dilation; tests of the reruns
	// set 1).
	Factor int64
	// stuckAfter is how long await waits with no client moving.
	stuckAfter time.Duration

	mu        sync.Mutex
	Now       time.Duration
	running   int // goroutines neither parked nor sleeping
	live      int // goroutines not finished
	Clients   []*clientState
	parked    []*parked
	sleepers  []*sleeper
	seq       int
	stopping  bool
	lastRun   *parked
	CmdLog    []CmdRecord
	torn      []string // what readers saw of a write in progress
	StepIndex int      // index of the step being taken

	// owned is the ownership violations the clients' replies showed
	// (world.Disowned).
	owned []result.Violation
	// Control is the scheduler's own connection, which it does not hold:
	// a target may read the server through it while one of its clients
	// runs, when nothing else moves.
	Control *redis.Client
	// ops is, for a recipe, each op's calls and replies (world.CountOp).
	ops map[string]*opTally
	// leaseLeft is what the lock's key had left to live (ms on the
	// server, 0 for gone or no expiry) when checkLease last read it, at
	// virtual time leaseAt.
	leaseLeft int64
	leaseAt   time.Duration
	// For the leases' real run-down: when the clock last advanced (the
	// server's time, µs, as the tick read it, on the one server and on
	// each node; and this process's time when it sent the tick), how
	// long the shortest lease then had to run in real time, and when each
	// key written since was written (between the sending of the command
	// and its reply).
	lastTickServer int64
	nodeTick       map[string]int64
	tickSent       time.Time
	shortest       time.Duration
	written        map[string]window
	// watching is the keys each client WATCHes (by name), on the one
	// server; owed is the time owed to each of those keys whose lease the
	// clock kept on the server (µs of the server's time; deferred.go).
	watching map[string][]string
	owed     map[string]int64
	// maybeGone is the keys owed time that a command may have deleted
	// since (deferred.go).
	maybeGone map[string]bool
	// unsteady is set when the real time the schedule took may have
	// changed its outcome (a stall longer than a lease's margin): the
	// schedule is run again (errUnsteady).
	unsteady bool
	// nodeDirty is the nodes a write went to since they last restarted:
	// only there can a node fault change anything.
	nodeDirty map[string]bool
	// For world.fingerprint: each key's writes (and WATCHes) in order,
	// the node faults, tokens named after the client that made them, and
	// opaque when a command touched keys it does not name.
	keyLog    map[string][]string
	nodeFalls []string
	tokens    map[string]string
	opaque    bool
	// maxDelay is the model's MaxDelay: how long a command may stay in
	// flight on the virtual clock, 0 for ever.
	maxDelay time.Duration
	// sleepAs, when set, is how long every sleep of a client lasts (in
	// virtual time), whatever it asked: a jittered backoff (locking.Backoff) would
	// otherwise sleep a random time, and a replay go another way.
	sleepAs time.Duration
	// goroutines is the goroutines the scheduler waits for, by id: each
	// client's own, and those its Go started.
	goroutines map[uint64]gref
	// parents is each goroutine's creator, as the tracebacks named it
	// (ancestry.go), and adopted how many goroutines were adopted.
	parents map[uint64]uint64
	adopted int
	// fatal, once set, ends the schedule and the search with it: the
	// clients did something the explorer cannot order (ErrOutside,
	// ErrWallClock).
	fatal error
	// bubble is set when the clients run in a testing/synctest bubble
	// (bubble.go), and timerWait when one of their goroutines waits in it
	// on something other than the scheduler (a timer, say).
	bubble    *bubble
	timerWait bool
	// timersFired counts the timers of the clients' code that fired on
	// the virtual clock (bubble.go).
	timersFired int
	// ids counts the values the explorer made for each client and kind
	// (tokens, call ids), so that a replay makes the same ones.
	ids map[string]int
}

// clientState is one client of one schedule: its go-redis client and
// where it stands.
type clientState struct {
	world *world
	Name  string
	Index int
	Redis *redis.Client

	// wall is what the client waited on the wall clock in the search
	// (world.look): the explorer's, for its client of that name. Guarded
	// by w.mu.
	wall *wallWait
	// last is its last command released and its reply, for messages.
	last string

	// Guarded by w.mu.
	paused      bool
	pausedUntil time.Duration // -1: for good (an unbounded pause)
	crashed     bool
	freePass    bool // the next command passes: an EVAL after its EVALSHA met NOSCRIPT
	holding     *hold
	endHold     bool // the hold ends with the client's next lock command
	wanted      bool // tried to take the lock
	got         int  // holds taken
	gaveUp      bool
	done        bool
	completed   int // critical sections whose write was applied
	pauses      int
	Steps       int // commands released
	// FromStarted is how many of them came from goroutines the client
	// started (with Go, or the go statement: ancestry.go).
	FromStarted int
	failure     error // an error that is not the schedule's doing
	// log is everything the client's code has learnt since the schedule
	// began, in order for each of its goroutines: each command's reply,
	// each reading of the clock, each end of a sleep. Its code being
	// deterministic, two clients with one log are in one state
	// (world.fingerprint). How its goroutines' entries interleave within
	// one step depends on real time, and does not count.
	log []logEntry
	// spawned is how many goroutines the client has had: its own (0),
	// then those its Go started, numbered in order.
	spawned int
	// sentAt is when its last command was parked, on the virtual clock:
	// where a lease it then says it holds (Client.Holding) starts.
	sentAt time.Duration
}

// logEntry is one entry of a client's log, with the number of the
// goroutine it is about (-1: one the explorer does not know).
type logEntry struct {
	g int
	s string
}

// gref is a goroutine of a client: the client, and its number among the
// client's goroutines (client.spawned).
type gref struct {
	c *clientState
	n int
	// adopted is set for a goroutine the client's code started with the
	// go statement (ancestry.go): the scheduler does not count it in
	// running and live, and reads from stack dumps whether it is at rest.
	adopted bool
}

// hold is what a client believes it holds.
type hold struct {
	Write bool
	Key   string // the lock key, when a target tells; empty: its first lock key
	// End is when the lease ends on the virtual clock, -1 for never.
	End func() time.Duration
	// held is the workload's hold (nil for a hold read from commands or
	// declared by Go code).
	held Held
}

// parked is a command (or a pipeline) waiting for the scheduler.
type parked struct {
	c     *clientState
	seq   int
	cmds  []redis.Cmder
	args  [][]string // cmds' arguments as text, written once (plumbing.Args)
	keys  []string
	write bool
	// written is the keys among keys that a command of it may write.
	written []string
	lock    bool   // touches a lock key
	node    string // the node it goes to ("" for the one server)
	desc    string
	reply   string
	g       int // the number of the goroutine that sent it
	// counted is false for a command of an adopted goroutine, which
	// world.running does not count.
	counted bool
	go_     chan error
	// since is when it was sent on the virtual clock: when it was
	// parked, or when its client's pause ended (Model.MaxDelay).
	since time.Duration
}

// sleeper is a goroutine waiting on a client's clock.
type sleeper struct {
	start    bool // a client waiting to begin a critical section (a Start action wakes it)
	c        *clientState
	g        int  // the number of the goroutine that sleeps
	counted  bool // false for an adopted goroutine (world.running)
	ctx      context.Context
	deadline time.Duration // -1: until ctx ends
	ch       chan error
	woken    bool
	stop     func() bool
}

// slot is where the hook of a go-redis client finds the client it sends
// for: the client of the schedule running, set by runOnce. The hook
// knows its client from the go-redis client, not from the command's
// context, so code that sends with a context of its own
// (context.Background()) is held like any other.
type slot struct {
	mu sync.Mutex
	c  *clientState
}

// window is when a command ran, as far as this process can tell: after
// it was sent, before its reply came back.
type window struct{ sent, replied time.Time }

// CmdRecord is one command as executed, for the timeline.
type CmdRecord struct {
	Step   int // index of the schedule's step that released it
	Client string
	at     time.Duration
	Args   [][]string
	Values []string
	Errs   []string
	// whole[i] is, for a reply Values[i] or Errs[i] cut to
	// plumbing.MaxReplyBytes, a digest of the whole reply (nil when
	// none was cut).
	whole []string
}

// Target is code to explore: clients that run a workload under the
// scheduler, and what is checked of them. Its workload is its own when
// Workload.Run is set, or else the generic one, whose clients take Lock
// around a critical section. Either way each client runs on its handle (Client), and the checks
// at a schedule's end read the runtime's record as a Snapshot.
type Target struct {
	// Name identifies the target ("recipe 4", "recipe 4 fixed", "lua").
	Name string
	// About says what it is.
	About string
	// Property is the property the target is known to break, or its fix
	// to keep; empty when unknown (a user's script).
	Property string
	// Clients is the default number of clients.
	Clients int
	// Checks is the properties checked unless told otherwise: those the
	// target's lesson is about. A lease lock without fencing cannot keep
	// the resource under a pause past its lease (recipe 6's lesson), so
	// the resource is checked only where fencing or its absence is the
	// point.
	Checks []string
	// Lock, for the generic workload, is the lock its clients take.
	Lock *Lock
	// Workload, when its Run is set, is a workload of the target's own.
	Workload Workload
	// Traits is what the target says of its clients that the explorer
	// relies on to read them and to cut its search.
	Traits Traits

	// ns is the namespace, the prefix of every key of the target: set on
	// an explorer's copy (Explorer.Prefix).
	ns string
	// nodes is the clients of the lock's nodes (Lock.Nodes), once an
	// explorer has opened them.
	nodes *nodeSet
}

// Lock is the lock a target's clients take in the generic workload: each
// client, Iterations times, takes it (retrying after the model's Retry,
// Attempts times at most), runs the critical section, and releases it.
// The critical section reads the counter and writes it back plus one
// (lost updates break Resource); a read-write lock's writer increments x
// and y together, and its readers find them equal.
type Lock struct {
	// New makes one client's lock on its handle: its go-redis client,
	// its lease (Client.Lease), its clock, its nodes.
	New func(c *Client) Locker
	// Keys is the lock's keys in namespace ns: where Liveness looks for
	// a key without expiry, unless the lock has a probe of its own.
	Keys func(ns string) []string
	// Check, when set, checks the lock before a search: a recipe's
	// scripts load, its commands exist (on the scheduler's connection).
	Check func(ctx context.Context, rdb redis.UniversalClient, ns string) error
	// Liveness, when set, checks liveness at the end of a schedule
	// instead of the look at Keys: a recipe's probe.
	Liveness func(ctx context.Context, e *Explorer, s Snapshot) ([]result.Violation, error)
	// Ops lists, for a recipe (a manifest or Lua scripts), its ops with
	// their ok as the manifest gives it; nil for any other lock.
	Ops []OpDesc
	// Nodes is the number of independent servers the lock runs on
	// (Redlock: Client.Nodes); 0 for the one server.
	Nodes int

	// ReadWrite: readers and a writer (Target.Writes).
	ReadWrite bool
	// Reentrant: each critical section takes the lock twice, nested,
	// and releases it twice.
	Reentrant bool
	// Permits, above 0, makes the lock a semaphore of that many permits:
	// Holders (at most Permits clients hold at once) is checked instead
	// of MutualExclusion.
	Permits int

	// Watchdog renews the hold in the background while the critical
	// section runs (locking.KeepAlive).
	Watchdog bool
	// Fenced makes the critical section's write commit only while the
	// lock key holds the hold's token (Lock.Held under WATCH).
	Fenced bool
	// Extend makes the critical section extend its hold once, between
	// its read and its write.
	Extend bool
}

// Workload is a workload of a target's own (the market, Go code): what
// each client runs, how each schedule's state is prepared, and how its
// end is checked.
type Workload struct {
	// Run is one client's workload. It calls Client.Begin at the start
	// of each critical section; the client is done when it returns nil.
	Run func(ctx context.Context, c *Client) error
	// Prepare, when set, prepares each schedule's state in namespace ns.
	Prepare func(ctx context.Context, rdb redis.UniversalClient, ns string) error
	// PrepareOnce says that Prepare does nothing but write keys of the
	// namespace, the same ones every time: it runs before the first
	// schedule only, and the keys it wrote are restored (DUMP, RESTORE)
	// before every other, in the one round trip that resets the
	// namespace.
	PrepareOnce bool
	// End, when set, checks the end of a schedule: it reads the server
	// through the explorer's connection and the runtime's record as s.
	End func(ctx context.Context, e *Explorer, s Snapshot) ([]result.Violation, error)
	// Resource, when set, describes the protected resource as it stands.
	Resource func(ctx context.Context, rdb redis.UniversalClient, ns string) (string, error)
}

// Traits is what a target says of its clients, which the explorer relies
// on. The zero value says nothing: clients that may differ, whose holds
// the lock's Locker tells.
type Traits struct {
	// Alike declares the clients alike but for their names: they run
	// the same code, which reads no client's name or index but through
	// its tokens and a recipe's ${client} (symmetry.go).
	Alike bool
	// Interchangeable declares, by index, a group of clients alike but
	// for their names among clients that are not (the market's two
	// buyers, not its seller): they run the same code on data that
	// differs only by their names, which the code writes in its commands
	// only through their tokens and Mentions. Only the group's clients
	// are renamed (symmetry.go); the code may read Client.Index to tell
	// the group from the others, never to tell the group's clients apart.
	Interchangeable []int
	// Mentions are the ways, besides its tokens, that the code of the
	// Interchangeable clients writes a client's name in its commands
	// (the keys of its own data, a receipt naming it): the symmetry
	// renames them too.
	Mentions []Mention
	// SteadySleeps makes every sleep of a client last Model.Retry (the
	// market's lock waits are jittered).
	SteadySleeps bool
	// InferHolds follows who holds the lock from the commands on lock
	// keys and their replies (world.inferHold), for a workload whose lock
	// is taken inside the code under test.
	InferHolds bool
	// declared is set by Code: the clients say what they hold themselves
	// (Client.Holding, Client.Released).
	declared bool
}

// Mention is a way code writes a client's name in its commands: Before,
// the name, then After (a user's key ":users:" and the name).
type Mention struct{ Before, After string }

// OpDesc is one op of a recipe: its name and its ok as the manifest
// gives it.
type OpDesc struct{ Name, OK string }

// Locker is one client's lock: attempts return a hold, or
// locking.ErrNotAcquired.
type Locker interface {
	Acquire(ctx context.Context, write bool) (Held, error)
}

// Quitter is a Locker that does something when its client stops waiting
// for the lock: a recipe's give_up op, a release by a client that holds
// nothing. The workload calls GiveUp once its last attempt was refused;
// the client has given up (clientState.gaveUp) once it returns.
type Quitter interface {
	GiveUp(ctx context.Context, write bool) error
}

// Held is a hold as the workload sees it.
type Held interface {
	Release(ctx context.Context) error
	// Extend renews the lease; locking.ErrNotHeld when it is lost.
	Extend(ctx context.Context) error
	// End is when the lease ends, on the virtual clock since the epoch;
	// -1 for never.
	End() time.Duration
}

// Client is one client of a target, as the explorer hands it to the code
// the client runs (Code, Workload.Run, Lock.New): its own go-redis client, whose every
// command and pipeline waits for the scheduler; the lease to ask for; its
// clock; its name; and where the code says what it does and what it
// believes it holds.
//
// Client is a locking.Clock: the context given to the client code carries
// it (locking.WithClock), so the locks of package locking run on it too.
type Client struct {
	c *clientState
	m action.Model
	// released is set by Released, until the critical section ends or
	// the client's own goroutine says it holds the lock again. Guarded by
	// c.world.mu.
	released bool
}

// Snapshot is the runtime's record of one schedule at one moment, copied:
// what a target's end-of-schedule check, a recipe's judgement of a reply
// and the views read. Nothing done to it reaches the runtime, which alone
// writes its record.
type Snapshot struct {
	// Now is the virtual time.
	Now time.Duration
	// Step is the index of the step being taken.
	Step int
	// Clients is each client as it stands, in order.
	Clients []ClientSnapshot
	// Commands is the commands executed so far, in order.
	Commands []CmdRecord

	// epoch and factor are the clock's: where the virtual time starts on
	// the clients' clock, and its dilation (Dilate).
	epoch  time.Time
	factor int64
}

// ClientSnapshot is one client as the runtime records it.
type ClientSnapshot struct {
	Name  string
	Index int
	// Write: it takes the lock to write (Target.Writes).
	Write bool
	// Wanted: it tried to take the lock.
	Wanted bool
	// Got is how many holds it took.
	Got int
	// GaveUp: its last attempt was refused and it stopped trying.
	GaveUp bool
	// Done: it finished its workload.
	Done bool
	// Completed is how many of its critical sections' writes were
	// applied.
	Completed int
	Crashed   bool
	Paused    bool
	// PausedUntil is when its pause ends; -1 for good.
	PausedUntil time.Duration
	// Steps is how many of its commands were released.
	Steps int
	// Hold is what it believes it holds; nil for nothing.
	Hold *HoldSnapshot
	// ids is how many values of each kind the explorer has made for it
	// (NextID), by kind: IDToken, then IDCall.
	ids [2]int
}

// HoldSnapshot is a hold a client believes it has.
type HoldSnapshot struct {
	Write bool
	// Key is the lock key, when the target tells; empty: its first lock
	// key.
	Key string
	// End is when the lease ends on the virtual clock; -1 for never.
	End time.Duration
	// Held is the hold as the target's Locker returned it; nil when the
	// hold is not the workload's (Go code of the user's, a lock read from
	// commands).
	Held Held
}

// Explorer runs a target's clients under the scheduler against one Redis.
// Each client has a go-redis client of its own (RESP2, no identity
// commands, no retries), carrying the hook that holds its commands.
type Explorer struct {
	// stuckAfter is Options.StuckAfter of the search running; between
	// searches, what SetStuckAfter set (by default defaultStuckAfter).
	stuckAfter time.Duration
	Redis      *redis.Client // the scheduler's own: resets, clock ticks, checks
	// Probe is a connection as the clients' user that no schedule holds:
	// for the target's own code that the scheduler runs itself, outside
	// a client (a recipe's liveness probe), which must have no more
	// rights than the clients when Redis is the administrative user.
	Probe   *redis.Client
	clients []*redis.Client
	// slots is, by client, where the hooks of its go-redis clients find
	// the client of the schedule running.
	slots []*slot
	// wall is, by client, what it waited on the wall clock in the
	// explorer's schedules.
	wall      []*wallWait
	target    *Target
	model     action.Model
	KeyPrefix string // the namespace of the target's keys (Prefix)
	epoch     time.Time
	resetAt   int64 // the server's time of the last reset, µs
	// prepared is, for a target whose Prepare is PrepareOnce, the keys it
	// wrote as SnapshotScript gives them, once it has run.
	prepared []any
	// unkept is set when the server could not keep the set-up's keys.
	unkept bool
	// nodeResetAt is, for a target of several nodes, each node's server
	// time at the last reset, µs.
	nodeResetAt []int64
	// Factor is the dilation of time: Dilation (tests of the reruns set
	// 1, where a stall of the machine runs a lease down as much).
	Factor int64
	Reruns atomic.Int64
	// Symmetric is set, for a search, when the state cache takes the
	// target's clients as alike but for their names (symmetry.go).
	Symmetric bool
	// Stall, when set (by tests), is called after each advance of the
	// clock with the shortest lease left on the virtual clock (0 for
	// none), before any client goes on: it may stall, as a busy machine
	// does.
	Stall func(left time.Duration)
	// For a parallel search: the Redis and the target the explorer was
	// made from, and the explorers of the other workers (lanes), made on
	// first use and closed by Close.
	base    *redis.Client
	control *redis.Options // what Redis is made from (NewControlled)
	orig    *Target
	lanes   []*Explorer
	// act is what the complete schedules of the current search saw.
	act activity
	// strays keeps, during a search, the violations of the runs that did
	// not end by themselves (a replay that diverged, among them), which
	// the search does not count: shared with the lanes.
	strays *strays
}

// strays is the shortest counterexample, by property, seen in a run that
// did not end by itself.
type strays struct {
	mu    sync.Mutex
	found map[string]result.Counterexample
}

// activity is what a search's complete schedules saw: how many had a
// holder, and each op's calls.
type activity struct {
	mu        sync.Mutex
	schedules int
	held      int
	ops       map[string]*opTally
	// started is, by client, the commands sent from goroutines it
	// started; timers is the timers of the clients' code that fired.
	started map[string]int
	timers  int
}

// opTally is what a schedule, or a search, saw of one op.
type opTally struct {
	calls, ok int
	replies   map[string]int
	order     []string // the replies in the order first seen
}

// wallWait is what one client waited on the wall clock in a search.
type wallWait struct {
	total time.Duration // the real time credited
	waits int           // the stalls it was seen waiting in
	what  string        // the last wait seen: "time.Sleep in pkg.F"
	until time.Time     // the real time credited up to
	stall time.Time     // the start of the last stall it was seen in
}

// bubble is a schedule's bubble, as the scheduler sees it from outside.
type bubble struct {
	mu      sync.Mutex
	queue   []delivery
	pending int    // deliveries queued or being made
	queued  uint64 // deliveries ever queued (deliveries)
	free    bool   // the schedule is over: the clock runs
	quit    bool   // the agent ends
	// kick wakes the agent (made outside the bubble: the agent's wait on
	// it keeps the fake clock still).
	kick chan struct{}
	// jobs is an advance asked of the agent: the bubble's elapsed time
	// to reach (its clock is dilated); landed is where it stopped.
	jobs   chan time.Duration
	landed chan time.Duration
	// advancing is set while the agent advances the clock; interrupt
	// (made in the bubble) stops it.
	advancing atomic.Bool
	interrupt chan struct{}
	done      chan struct{} // closed when the bubble has ended
	// id is the bubble's, and agent the agent's goroutine, as stack
	// dumps name them.
	id      string
	agentID uint64
	cancel  func() // ends the clients' context (in the bubble)
}

type delivery struct {
	ch  chan error
	err error
}

// nodeSet is the go-redis clients of a target's nodes.
type nodeSet struct {
	Clients [][]*redis.Client // by client, then node: with the hook
	ctl     []*redis.Client   // by node: the scheduler's own
}
