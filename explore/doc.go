// Package explore checks a Redis lock of your own, written in Go, against a
// real Redis: it runs the lock's clients under a scheduler that releases
// one command at a time, on a virtual clock, through every schedule within
// the bounds (or random ones), and returns the shortest schedule that
// breaks each property.
//
// A Target's Client function is what each client does, given a *Client
// whose Redis method is its own go-redis client: every command and
// pipeline sent with the context Client was given waits for the
// scheduler. It calls the lock's acquire and release unchanged and says
// what it believes: Holding(lease) once it holds the lock (the lease
// counts from the virtual time its last command was sent), Released() just
// before it releases it. MutualExclusion is broken when two clients
// believe they hold the lock and neither's lease has run out on the
// virtual clock. Setup prepares each schedule's keys and Check checks them
// at its end (an error breaks Resource); both are optional. Every key is
// made by Client.Key (or Namespace.Key): each schedule starts with none,
// and the clock runs leases down only there. The client's Lease is the
// TTL to ask for, and its Now, Sleep and Go run on the virtual clock: a
// real time.Sleep blocks outside the scheduler, and the search ends with
// ErrWallClock.
//
// Check explores a target within Options' bounds and returns the Result:
// how far the search went and a Counterexample of each property broken,
// replayed on a fresh redis-server. Package exploretest runs it from go
// test.
//
// # The engine
//
// Package explore is the user's API over the explorer's engine, which
// lives under internal/explore, where no other module can import it. Its
// packages import only those below them:
//
//   - internal/explore/step: stepping through one schedule by hand (the
//     lab page);
//   - internal/explore/targets: the catalogue's recipes, the watchdog,
//     Redlock, the market, Lua scripts and recipe manifests, as targets;
//   - internal/explore/view: a schedule narrated and a search reported,
//     for people;
//   - internal/explore/sched: the runtime: clients, scheduler, virtual
//     clock, faults, properties, the verdict and its replay;
//   - internal/explore/plumbing: the hook that holds each command, the
//     scripts that empty a namespace and shorten its leases, node keys;
//   - internal/explore/search: which choice a schedule takes next; no
//     Redis.
//
// Each of these packages states in its comment what of this module it
// imports, and a test of the docs holds the comments to the code and to
// the layers of docs/architecture.md. The explorer's command (simulate
// explore) and the page use the engine directly, for what this API does
// not offer (the catalogue, shards, a schedule stepped by hand; the
// page's service lies under internal/, below this package);
// docs/architecture.md says why, and docs/explorer.md tells the whole
// story.
//
// Of this module, it imports only internal/explore/{action, result,
// sched, search, view}. Its tests also import
// internal/testsupport/redistest.
package explore
