// Package targets makes the explorer's targets: the recipes of the lock
// catalogue (flawed and fixed), the watchdog, Redlock over several nodes,
// the market's strategies, a lock given as Lua scripts, and a recipe
// manifest (recipe.json and its scripts) read from a directory. Each is a
// sched.Target whose lockers and checks are built on the runtime's
// exported interface.
//
// Of this module, it imports only internal/explore/{action, result, sched,
// plumbing}, the market, the lock catalogue (locking), its flawed
// recipes (internal/flawed) and internal/redis/rediscmd: nothing above it
// (step, explore). Its tests also import internal/explore/{search, view},
// internal/timeline and internal/testsupport/{race, redistest}.
package targets
