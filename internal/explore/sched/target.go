package sched

import (
	"strings"

	"github.com/lockmarket/lockmarket/internal/explore/plumbing"
	"github.com/lockmarket/lockmarket/internal/redis/rediscmd"
	"github.com/redis/go-redis/v9"
)

// Keys of the generic workload, under the namespace: the counter a lock's
// critical section increments, and the pair x and y a read-write lock's
// writer increments together and its readers find equal.
const (
	lockName      = "lock:L"
	CounterKey    = "counter"
	ReadWriteKeyX = "x"
	ReadWriteKeyY = "y"
)

// IsLock reports whether key is a lock key of the target's namespace
// ("lock:...", braced or not).
func (t *Target) IsLock(key string) bool {
	return strings.HasPrefix(key, t.ns+"lock:") || strings.HasPrefix(key, "{"+t.ns+"lock:")
}

// Short is text with the namespace left out.
func (t *Target) Short(s string) string {
	s = strings.ReplaceAll(s, "{"+t.ns, "{")
	return strings.ReplaceAll(s, t.ns, "")
}

// describe is a command's name and keys, for reading and to tell pending
// commands apart: no tokens, no values that change between runs.
func (t *Target) describe(cmds []redis.Cmder) string {
	return t.describeArgs(plumbing.Args(cmds))
}

// describeArgs is describe of the commands' arguments as plumbing.Args
// writes them.
func (t *Target) describeArgs(args [][]string) string {
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = rediscmd.Describe(a, t.Short)
	}
	return strings.Join(parts, "; ")
}

// RegisterScript names a script of a target in the steps and timelines.
func RegisterScript(name string, s *redis.Script) { rediscmd.Register(name, s.Hash()) }

// Writes reports whether client i of a schedule of the given number of
// clients takes the lock to write: every client of a mutex; of a
// read-write lock (ReadWrite), the last one only, the others to read.
func (t *Target) Writes(i, clients int) bool { return !t.lock().ReadWrite || i == clients-1 }

// noLock is the Lock of a target with a workload of its own: a mutex on
// one server, whose fields say nothing.
var noLock Lock

// lock is the target's Lock, or noLock for a workload of its own.
func (t *Target) lock() *Lock {
	if t.Lock == nil {
		return &noLock
	}
	return t.Lock
}

// LockKey is the key of the generic workload's lock in namespace ns.
func LockKey(ns string) string { return ns + lockName }

// NamespacePattern matches every key of namespace ns: those that begin with it,
// and those that name one of its keys inside a longer string (a recipe's
// "lock-signal:${lock}" or "{${lock}}:rwlock_timeout"). Its leases follow
// the virtual clock, and each schedule starts without them.
func NamespacePattern(ns string) string { return "*" + strings.Trim(ns, "{}:") + "*" }

// SingleLockKey is a Lock.Keys for a lock whose one key is
// LockKey(ns).
func SingleLockKey(ns string) []string { return []string{LockKey(ns)} }

// Nodes is the number of independent servers the target's lock runs on;
// 0 for the one server.
func (t *Target) Nodes() int { return t.lock().Nodes }
