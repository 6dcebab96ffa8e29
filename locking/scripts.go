package locking

import (
	"crypto/sha1"
	"encoding/hex"

	"github.com/lockmarket/lockmarket/locking/internal/lease"
)

// Names of the scripts of a Mutex, as ScriptName gives them. The scripts
// of the other kinds have names of their own.
const (
	ScriptAcquireFenced  = "acquire-fenced"  // SET NX PX and the fence's INCR (WithFencing)
	ScriptExtend         = "extend"          // PEXPIRE if the key holds the token
	ScriptRelease        = "release"         // DEL if the key holds the token
	ScriptReleasePublish = "release-publish" // release, and announce it (WithWakeups)
)

// Names of the scripts of the other kinds.
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

// scriptNames maps each script's SHA1 to its name.
var scriptNames = map[string]string{
	fencedAcquireScript.Hash():    ScriptAcquireFenced,
	lease.ExtendScript.Hash():     ScriptExtend,
	lease.ReleaseScript.Hash():    ScriptRelease,
	releasePublishScript.Hash():   ScriptReleasePublish,
	reentrantAcquireScript.Hash(): scriptReentrantAcquire,
	reentrantReleaseScript.Hash(): scriptReentrantRelease,
	reentrantExtendScript.Hash():  scriptReentrantExtend,
	readAcquireScript.Hash():      scriptReadAcquire,
	readExtendScript.Hash():       scriptReadExtend,
	readReleaseScript.Hash():      scriptReadRelease,
	writeAcquireScript.Hash():     scriptWriteAcquire,
	writeGiveUpScript.Hash():      scriptWriteGiveUp,
}

// ScriptName names a script of this package from what a command log
// shows of it: its SHA1, as EVALSHA sends it, or its source, as EVAL
// does. It returns "" for any other script. Tools that read a log of
// commands (a timeline of a run) use it to tell the lock's scripts apart
// by name rather than by the shape of their arguments, which a change to a
// script would silently change.
func ScriptName(shaOrSource string) string {
	if name, ok := scriptNames[shaOrSource]; ok {
		return name
	}
	sum := sha1.Sum([]byte(shaOrSource))
	return scriptNames[hex.EncodeToString(sum[:])]
}
