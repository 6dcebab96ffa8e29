package locking

import (
	"crypto/sha1"
	"encoding/hex"

	"github.com/lockmarket/lockmarket/locking/internal/lease"
)

// Names of the scripts of this package, as ScriptName gives them.
const (
	ScriptAcquireFenced    = "acquire-fenced"  // SET NX PX and the fence's INCR (WithFencing)
	ScriptExtend           = "extend"          // PEXPIRE if the key holds the token
	ScriptRelease          = "release"         // DEL if the key holds the token
	ScriptReleasePublish   = "release-publish" // release, and announce it (WithWakeups)
	ScriptReentrantAcquire = "reentrant-acquire"
	ScriptReentrantRelease = "reentrant-release"
	ScriptReentrantExtend  = "reentrant-extend"
	ScriptReadAcquire      = "read-acquire"
	ScriptReadExtend       = "read-extend"
	ScriptReadRelease      = "read-release"
	ScriptWriteAcquire     = "write-acquire"
	ScriptWriteGiveUp      = "write-give-up"
)

// scriptNames maps each script's SHA1 to its name.
var scriptNames = map[string]string{
	fencedAcquireScript.Hash():    ScriptAcquireFenced,
	lease.ExtendScript.Hash():     ScriptExtend,
	lease.ReleaseScript.Hash():    ScriptRelease,
	releasePublishScript.Hash():   ScriptReleasePublish,
	reentrantAcquireScript.Hash(): ScriptReentrantAcquire,
	reentrantReleaseScript.Hash(): ScriptReentrantRelease,
	reentrantExtendScript.Hash():  ScriptReentrantExtend,
	readAcquireScript.Hash():      ScriptReadAcquire,
	readExtendScript.Hash():       ScriptReadExtend,
	readReleaseScript.Hash():      ScriptReadRelease,
	writeAcquireScript.Hash():     ScriptWriteAcquire,
	writeGiveUpScript.Hash():      ScriptWriteGiveUp,
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
