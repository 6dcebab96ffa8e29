// Package targets makes the explorer's targets: the recipes of the lock
// catalogue (flawed and fixed), the watchdog, Redlock over several nodes,
// the market's strategies, a lock given as Lua scripts, and a recipe
// manifest (recipe.json and its scripts) read from a directory. Each is a
// sched.Target whose lockers and checks are built on the runtime's
// exported interface.
//
// It may import packages sched and plumbing, the market, the lock
// catalogue (locking and the flawed recipes of internal/failure/flawed),
// internal/redis/rediscmd, go-redis and the standard library; nothing
// above it (step, explore).
package targets
