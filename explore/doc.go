// Package explore searches the schedules of a lock's real code against a
// real Redis for a broken lock, a broken resource or a stuck lock.
//
// Each client of a Target runs in its own goroutine with its own go-redis
// client, whose hook holds every command and pipeline until the scheduler
// releases it, so Redis runs them in exactly the order the scheduler
// chose. Time is a virtual clock carried in the clients' contexts
// (locking.WithClock): backoff sleeps, lease estimates and the watchdog of
// package locking run on it, and each advance of the clock shortens every
// lease in the explored namespace by as much (PEXPIRE), so that PTTL, in a
// Lua script too, sees the virtual time left. Between two choices the
// scheduler waits until every goroutine of every client is parked at a
// command, asleep on the clock, or finished.
//
// A choice (Action) releases one client's pending command, lets a client
// start a critical section, advances the clock to a deadline (a sleep's
// end, a pause's end), or strikes a fault: a pause of a client (half a
// lease, one and a half leases, or for good) or a crash. The Model bounds
// what a schedule may hold. Explorer.Explore enumerates every schedule
// within the bounds, depth first, with a sleep-set reduction (steps of
// different clients on different keys, or only reading the same ones, are
// taken in one order only), or random ones; each schedule starts from an
// empty namespace and replays its prefix of choices. Three properties are
// checked and reported apart: MutualExclusion (two clients hold leases
// that have not run out, one of them to write), Resource (the shared
// counter lost an update, or a reader saw a write half done) and Liveness
// (a lock without expiry that no live client holds keeps a client
// waiting). The shortest counterexample found is shortened further
// (shrink), can be replayed on a fresh redis-server (Reproduce) and
// rendered as a timeline (Explorer.Record). A search's Result is written
// for a person by Result.WriteSummary and Result.WriteFindings, and as
// JSON by its MarshalJSON (Result.JSON to embed it in a document).
//
// Strategy makes a target of the market (package market): its real List
// and Purchase, two buyers on one listing, the resource checked by its
// Audit.
//
// Redlock makes a target of locking.RedlockMutex over several nodes,
// logical databases of the one server, each client with a hooked go-redis
// client per node, so that every command to every node is scheduled. Two
// more faults strike a node: a restart that loses its keys
// (FaultNodeRestart) and a jump of its clock that shortens its leases
// (FaultClockJump).
//
// Cut and FindFrom step through one schedule by hand, for the lab page.
//
// # Your own lock, in Go
//
// A Target whose Client field is set is Go code of your own: Client is
// what each client does, given a *Client whose Redis method is its own
// go-redis client (every command and pipeline sent with the context
// Client was given waits for the scheduler). It calls your lock's acquire
// and release unchanged, and says what it believes: Holding(lease) once
// it holds the lock (the lease counts from the virtual time its last
// command was sent), Released() just before it releases it (it stops
// holding when its next command runs). Mutual exclusion is broken when
// two clients believe they hold the lock and neither's lease has run out
// on the virtual clock. Setup prepares each schedule's keys and Check
// checks them at its end (an error is a violation of Resource); both are
// optional. Every key is made by Client.Key (or Namespace.Key): each
// schedule starts with none, and the clock runs leases down only there.
// The client's Lease is the TTL to ask for, and its Now, Sleep and Go run
// on the virtual clock: a real time.Sleep blocks outside the scheduler,
// and the leases on the server run down in real time meanwhile.
//
// Check explores such a target (or any other) on a Redis within
// Options.Model's bounds, on Options.Workers workers (by default the
// machine's cores), and returns the Result: the shortest counterexample
// of each property broken. Package exploretest runs it from go test.
//
// # Layers
//
// The package is built in layers. The search (package explore/search)
// picks which enabled action a schedule takes next, and knows nothing of
// Redis: the explorer is a search.System to it, whose choices are the
// enabled actions, identified by their Action, with the independence
// above and the fingerprint of the state. The runtime (world.go,
// sched.go) runs the clients' goroutines, parks them at each command or
// on the clock, releases one command at a time, strikes the faults and
// checks the properties. The Redis plumbing (the hook, the scripts that
// reset a namespace and shorten its leases, the nodes) sits under it;
// the targets (recipes, the market, the watchdog, Redlock, Lua) on top.
package explore
