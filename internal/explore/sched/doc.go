// Package sched is the explorer's runtime: it runs a Target's clients,
// each in its own goroutines with its own go-redis client, under a
// scheduler that releases one command at a time, on a virtual clock, with
// faults, and checks the properties at every step.
//
// Each client's go-redis client carries the hook of package plumbing,
// which parks every command until the scheduler releases it, so Redis
// runs them in exactly the order chosen. Time is a virtual clock carried
// in the clients' contexts (locking.WithClock): backoff sleeps, lease
// estimates and the watchdog of package locking run on it, and each
// advance of the clock shortens every lease in the explored namespace by
// as much, so that PTTL, in a Lua script too, sees the virtual time left.
// Between two choices the scheduler waits until every goroutine of every
// client is parked at a command, asleep on the clock, or finished.
//
// A choice (an action.Action) releases one client's pending command, lets
// a client start a critical section, advances the clock to a deadline, or
// strikes a fault: a pause of a client (half a lease, one and a half
// leases, or for good), a crash, or on a node a restart or a jump of its
// clock. What each fault is lives in package action, how it strikes in
// this package (faults.go). The action.Model bounds what a schedule may
// hold. Explorer.Explore hands the
// choices to package search (the explorer is a search.System to it):
// every schedule within the bounds, with sleep sets, a state cache and
// the clients' symmetry, or random ones. Each schedule starts from an
// empty namespace and replays its prefix of choices. The properties
// (result.Properties) are checked and reported apart; the shortest
// counterexample of each is shortened further and replayed on a fresh
// redis-server (Reproduce) before it counts, and the search's
// result.Result holds them. The clients' goroutines are told apart by
// their ids and creators (package goroutine).
//
// A Target is what the runtime runs, written on each client's handle
// (Client): its Lock makes each client's lock, which the runtime's own
// workload takes, or its Workload is the whole workload of a client; Code
// makes one of a user's Go code, and package targets makes the
// catalogue's. The runtime alone writes its record of a schedule; a
// target reads a copy (Snapshot).
//
// Of this module, it imports only internal/explore/{action, result,
// goroutine, search, plumbing}, the lock catalogue (locking),
// internal/timeline and internal/redis/{rediscmd, redisserver}: nothing
// above it (targets, view, step, explore). Its tests also import
// internal/testsupport/redistest.
package sched
