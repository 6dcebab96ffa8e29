// Package rediscmd reads a Redis command from its arguments, as a log of
// commands shows them: the keys it touches, whether it may write, the
// name of the script it runs, and what it means for a lock. The explorer
// (which orders commands by their keys and names them in its steps) and
// package timeline (which reads a run's commands for their meaning) read
// commands through it, so that the two say the same of one command.
package rediscmd

import (
	"crypto/sha1"
	"encoding/hex"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/lockmarket/lockmarket/locking/locktrace"
)

// Unknown stands, among a command's keys, for keys it does not name (a
// command this package does not know, a script called without KEYS).
const Unknown = "*"

// Name is the command's name, lower case.
func Name(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return strings.ToLower(args[0])
}

// Keys is the keys a command touches, Unknown for keys it does not name,
// and whether it may write. MULTI, EXEC, DISCARD, UNWATCH and PING touch
// none; WATCH reads its keys; a script may write, and touches its KEYS; a
// data command (DataCommand) touches the keys its place in the table of
// commands names; PUBLISH reaches clients beyond every key, so it stands
// for Unknown keys, as any command the table does not know does.
func Keys(args []string) (keys []string, write bool) {
	name := Name(args)
	switch name {
	case "", "multi", "exec", "discard", "unwatch":
		return nil, false
	case "watch":
		return args[1:], false
	case "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall":
		if ks, _, ok := ScriptArgs(args); ok {
			return ks, true
		}
		return []string{Unknown}, true
	}
	c, known := lookup(args)
	idx, ok := KeyIndexes(args)
	if !known || !ok || c.beyond {
		return []string{Unknown}, true
	}
	for _, i := range idx {
		keys = append(keys, args[i])
	}
	return keys, !c.read
}

// ScriptArgs splits the arguments of EVAL, EVALSHA (and their _RO forms)
// or FCALL into its keys and its other arguments; ok is false when they
// do not say how many keys there are.
func ScriptArgs(args []string) (keys, argv []string, ok bool) {
	if len(args) < 3 {
		return nil, nil, false
	}
	n, err := strconv.Atoi(args[2])
	if err != nil || n < 0 || 3+n > len(args) {
		return nil, nil, false
	}
	return args[3 : 3+n], args[3+n:], true
}

var (
	scriptMu    sync.Mutex
	scriptNames = map[string]string{} // by SHA1
)

// Register names a script by its SHA1 (hex, as EVALSHA sends it), for
// ScriptName.
func Register(name, sha1Hex string) {
	scriptMu.Lock()
	defer scriptMu.Unlock()
	scriptNames[sha1Hex] = name
}

func sha(source string) string {
	sum := sha1.Sum([]byte(source))
	return hex.EncodeToString(sum[:])
}

// ScriptName names a script from what a command shows of it, its SHA1
// (EVALSHA) or its source (EVAL): the name package locking gives its own
// scripts, or the name it was registered with, or "script" and the first
// eight digits of its SHA1.
func ScriptName(shaOrSource string) string {
	if n := locktrace.ScriptName(shaOrSource); n != "" {
		return n
	}
	scriptMu.Lock()
	defer scriptMu.Unlock()
	if n, ok := scriptNames[shaOrSource]; ok {
		return n
	}
	h := sha(shaOrSource)
	if n, ok := scriptNames[h]; ok {
		return n
	}
	if len(shaOrSource) == 40 {
		h = shaOrSource
	}
	return "script " + h[:8]
}

// Describe is a command's name and keys (through short), with a SET's
// options and a script's name: no tokens, no values that change from one
// run to the next ("SET NX PX lock:L", "EVAL release lock:L").
func Describe(args []string, short func(string) string) string {
	name := strings.ToUpper(args[0])
	switch name {
	case "EVALSHA", "EVAL":
		if len(args) > 1 {
			name = "EVAL " + ScriptName(args[1])
		}
	case "SET":
		for _, a := range args[min(3, len(args)):] {
			if u := strings.ToUpper(a); u == "NX" || u == "XX" || u == "PX" || u == "EX" || u == "GET" {
				name += " " + u
			}
		}
	}
	keys, _ := Keys(args)
	for _, k := range keys {
		if k != Unknown {
			name += " " + short(k)
		}
	}
	return name
}

// Show renders a command for reading: keys through short, tokens
// shortened, long values clipped, a script by its name.
func Show(args []string, short func(string) string) string {
	if len(args) == 0 {
		return ""
	}
	out := []string{strings.ToUpper(args[0])}
	for i, a := range args[1:] {
		switch {
		case i == 0 && (out[0] == "EVAL" || out[0] == "EVALSHA"):
			out = append(out, "‹"+ScriptName(a)+"›")
		case LooksLikeToken(a):
			out = append(out, Clip(a, 8))
		default:
			out = append(out, Clip(short(a), 40))
		}
	}
	return strings.Join(out, " ")
}

// LooksLikeToken says whether s is a random token (a UUID or a long hex
// string), shown shortened.
func LooksLikeToken(s string) bool {
	if len(s) < 16 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c == '-') {
			return false
		}
	}
	return true
}

// Clip cuts s to n runes, marking the cut.
func Clip(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// Bound is s when it is at most n bytes long; a longer s is cut to its
// first n bytes or fewer (never inside a UTF-8 sequence) followed by a
// visible marker of its whole length, "…(N bytes)". It is how a value that
// comes from a server a script wrote (a reply, a key's value, an error's
// text) is shown: never whole, since a script may make it megabytes long.
func Bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := max(n, 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…(" + strconv.Itoa(len(s)) + " bytes)"
}

// Op is what a command did to a lock.
type Op string

// The ops.
const (
	// Acquire took the lock.
	Acquire Op = "acquire"
	// AcquireFailed found the lock held.
	AcquireFailed Op = "acquire_failed"
	// Lease set or renewed the lock's lease.
	Lease Op = "lease"
	// Delete is a DEL of the lock key, whoever holds it.
	Delete Op = "delete"
	// Release is a release that checks the releaser's token (a script).
	Release Op = "release"
)

// Lock is what a command on a lock key meant, read with its reply.
type Lock struct {
	Op Op
	// Key is the lock key.
	Key string
	// How is the command as a reader knows it: "SET NX PX", "SETNX",
	// "PEXPIRE", "DEL", "release script", "extend script", "script".
	How string
	// Token is the value an acquire wrote; Fence the fence a fenced
	// acquire returned.
	Token, Fence string
	// TTL is the lease an acquire or a lease set; 0 for none.
	TTL time.Duration
	// NX is set for a SET NX.
	NX bool
	// Done is, for a Delete or a Release, whether the key was deleted.
	Done bool
}

// ReadLock reads a command on a lock key with its reply (value, or
// errText when it failed; "(nil)" for a nil reply): ok is false when the
// command is not on a lock key (isLock), failed, or means nothing this
// package reads (another lock's script, a read). A script is read by its
// name (ScriptName), never by the shape of its arguments.
func ReadLock(args []string, value, errText string, isLock func(key string) bool) (l Lock, ok bool) {
	if errText != "" || len(args) < 2 {
		return Lock{}, false
	}
	arg := func(i int) string {
		if i < len(args) {
			return args[i]
		}
		return ""
	}
	name, key := Name(args), args[1]
	switch name {
	case "set":
		if !isLock(key) {
			return Lock{}, false
		}
		l = Lock{Key: key, How: "SET", Token: arg(2)}
		get := false
		for i := 3; i < len(args); i++ {
			switch strings.ToLower(args[i]) {
			case "nx":
				l.How += " NX"
				l.NX = true
			case "get":
				l.How += " GET"
				get = true
			case "px", "ex":
				n, _ := strconv.ParseInt(arg(i+1), 10, 64)
				unit := time.Millisecond
				if strings.EqualFold(args[i], "ex") {
					unit = time.Second
				}
				l.TTL = time.Duration(n) * unit
				l.How += " " + strings.ToUpper(args[i])
			}
		}
		// With GET the reply is the value before: none means the SET was
		// made, and the client's own token that an earlier attempt of its
		// own had made it.
		took := value == "OK" || value == "true"
		if get {
			took = value == "(nil)" || value == arg(2)
		}
		l.Op = AcquireFailed
		if took {
			l.Op = Acquire
		}
		return l, true
	case "setnx":
		if !isLock(key) {
			return Lock{}, false
		}
		l = Lock{Op: AcquireFailed, Key: key, How: "SETNX", Token: arg(2), NX: true}
		if value == "true" || value == "1" {
			l.Op = Acquire
		}
		return l, true
	case "expire", "pexpire":
		if !isLock(key) || value != "true" && value != "1" {
			return Lock{}, false
		}
		n, _ := strconv.ParseInt(arg(2), 10, 64)
		unit := time.Millisecond
		if name == "expire" {
			unit = time.Second
		}
		return Lock{Op: Lease, Key: key, How: strings.ToUpper(name), TTL: time.Duration(n) * unit}, true
	case "del":
		if !isLock(key) {
			return Lock{}, false
		}
		return Lock{Op: Delete, Key: key, How: "DEL", Done: value == "1"}, true
	case "eval", "evalsha":
		keys, argv, _ := ScriptArgs(args)
		if len(keys) == 0 || !isLock(keys[0]) {
			return Lock{}, false
		}
		script := ScriptName(args[1])
		switch {
		case script == locktrace.ScriptRelease || script == locktrace.ScriptReleasePublish:
			return Lock{Op: Release, Key: keys[0], How: "release script", Done: value == "1"}, true
		case len(argv) < 2:
			return Lock{}, false
		case script == locktrace.ScriptAcquireFenced:
			n, _ := strconv.ParseInt(argv[1], 10, 64)
			l = Lock{Op: AcquireFailed, Key: keys[0], How: "script", Token: argv[0], TTL: time.Duration(n) * time.Millisecond}
			if value != "0" && value != "" {
				l.Op, l.Fence = Acquire, value
			}
			return l, true
		case script == locktrace.ScriptExtend && value == "1":
			n, _ := strconv.ParseInt(argv[1], 10, 64)
			return Lock{Op: Lease, Key: keys[0], How: "extend script", TTL: time.Duration(n) * time.Millisecond}, true
		}
	}
	return Lock{}, false
}
