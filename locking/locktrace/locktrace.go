// Package locktrace holds what tools that read a log of the commands a
// lock of package locking sent need, in the manner of net/http/httptrace:
// the names of its Lua scripts. A timeline of a run, or the explorer's
// steps, name a script by what it does rather than by its SHA1 or by the
// shape of its arguments, which a change to a script would silently
// change. Nothing needs it to use a lock.
package locktrace

import (
	"github.com/lockmarket/lockmarket/locking/internal/lease"

	// Package locking names its scripts as it is loaded.
	_ "github.com/lockmarket/lockmarket/locking"
)

// Names of the scripts of a locking.Mutex, as ScriptName gives them. The
// scripts of the other kinds have names of their own.
const (
	ScriptAcquireFenced  = lease.ScriptAcquireFenced  // SET NX PX and the fence's INCR (WithFencing)
	ScriptExtend         = lease.ScriptExtend         // PEXPIRE if the key holds the token
	ScriptRelease        = lease.ScriptRelease        // DEL if the key holds the token
	ScriptReleasePublish = lease.ScriptReleasePublish // release, and announce it (WithWakeups)
)

// ScriptName names a script of package locking from what a command log
// shows of it: its SHA1, as EVALSHA sends it, or its source, as EVAL
// does. It returns "" for any other script.
func ScriptName(shaOrSource string) string { return lease.ScriptName(shaOrSource) }
