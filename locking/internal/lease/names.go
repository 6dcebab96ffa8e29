package lease

import (
	"crypto/sha1"
	"encoding/hex"
)

// Names of the scripts of a Mutex, as package locking/locktrace exports
// them. The scripts of the other kinds have names of their own.
const (
	ScriptAcquireFenced  = "acquire-fenced"  // SET NX PX and the fence's INCR (WithFencing)
	ScriptExtend         = "extend"          // PEXPIRE if the key holds the token
	ScriptRelease        = "release"         // DEL if the key holds the token
	ScriptReleasePublish = "release-publish" // release, and announce it (WithWakeups)
)

// scriptNames maps each named script's SHA1 to its name. NameScripts
// fills it while package locking is initialized, before anything reads
// it.
var scriptNames = map[string]string{}

// NameScripts records names, each script's name by its SHA1.
func NameScripts(names map[string]string) {
	for sha, name := range names {
		scriptNames[sha] = name
	}
}

// ScriptName names a script of package locking from what a command log
// shows of it: its SHA1, as EVALSHA sends it, or its source, as EVAL
// does. It returns "" for any other script.
func ScriptName(shaOrSource string) string {
	if name, ok := scriptNames[shaOrSource]; ok {
		return name
	}
	sum := sha1.Sum([]byte(shaOrSource))
	return scriptNames[hex.EncodeToString(sum[:])]
}
