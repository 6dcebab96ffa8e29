package locking

import "github.com/lockmarket/lockmarket/locking/internal/lease"

// Names of the scripts of the kinds other than Mutex (whose names are
// lease's, exported by package locking/locktrace).
const (
	scriptReentrantAcquire = "reentrant-acquire"
	scriptReentrantRelease = "reentrant-release"
	scriptReentrantExtend  = "reentrant-extend"
	scriptReadAcquire      = "read-acquire"
	scriptReadExtend       = "read-extend"
	scriptReadRelease      = "read-release"
	scriptWriteAcquire     = "write-acquire"
	scriptWriteGiveUp      = "write-give-up"
)

// The names of the scripts, each by its SHA1, for tools that read a log
// of commands (locktrace.ScriptName): they tell the lock's scripts apart
// by name rather than by the shape of their arguments, which a change to
// a script would silently change.
func init() {
	lease.NameScripts(map[string]string{
		fencedAcquireScript.Hash():    lease.ScriptAcquireFenced,
		lease.ExtendScript.Hash():     lease.ScriptExtend,
		lease.ReleaseScript.Hash():    lease.ScriptRelease,
		releasePublishScript.Hash():   lease.ScriptReleasePublish,
		reentrantAcquireScript.Hash(): scriptReentrantAcquire,
		reentrantReleaseScript.Hash(): scriptReentrantRelease,
		reentrantExtendScript.Hash():  scriptReentrantExtend,
		readAcquireScript.Hash():      scriptReadAcquire,
		readExtendScript.Hash():       scriptReadExtend,
		readReleaseScript.Hash():      scriptReadRelease,
		writeAcquireScript.Hash():     scriptWriteAcquire,
		writeGiveUpScript.Hash():      scriptWriteGiveUp,
	})
}
