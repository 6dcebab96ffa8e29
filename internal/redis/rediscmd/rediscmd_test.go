package rediscmd

import (
	"crypto/sha1"
	"encoding/hex"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestKeys(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		keys  []string
		write bool
	}{
		{[]string{"GET", "k"}, []string{"k"}, false},
		{[]string{"set", "k", "v", "NX", "PX", "10"}, []string{"k"}, true},
		{[]string{"MGET", "a", "b"}, []string{"a", "b"}, false},
		{[]string{"MSET", "a", "1", "b", "2"}, []string{"a", "b"}, true},
		{[]string{"WATCH", "a", "b"}, []string{"a", "b"}, false},
		{[]string{"MULTI"}, nil, false},
		{[]string{"PING"}, nil, false},
		{[]string{"EVALSHA", "abc", "2", "k1", "k2", "tok"}, []string{"k1", "k2"}, true},
		{[]string{"EVAL", "return 1", "x"}, []string{Unknown}, true},
		{[]string{"OBJECT", "FREQ", "k"}, []string{"k"}, false},
		{[]string{"XINFO", "STREAM", "s"}, []string{"s"}, false},
		{[]string{"xinfo", "stream", "s", "FULL"}, []string{"s"}, false},
		{[]string{"XINFO", "CONSUMERS", "s", "g"}, []string{"s"}, false},
		{[]string{"XINFO", "HELP"}, []string{Unknown}, true},
		{[]string{"XINFO"}, []string{Unknown}, true},
		{[]string{"MEMORY", "STATS"}, []string{Unknown}, true},
		{[]string{"CONFIG", "GET", "maxmemory"}, []string{Unknown}, true},
		{[]string{"XADD", "s", "*", "f", "v"}, []string{"s"}, true},
		{[]string{"XRANGE", "s", "-", "+"}, []string{"s"}, false},
		{[]string{"LREM", "q", "0", "tok"}, []string{"q"}, true},
		{[]string{"UNLINK", "a", "b"}, []string{"a", "b"}, true},
		{[]string{"SISMEMBER", "s", "m"}, []string{"s"}, false},
		{[]string{"SMOVE", "a", "b", "m"}, []string{"a", "b"}, true},
		{[]string{"LMPOP", "2", "a", "b", "LEFT"}, []string{"a", "b"}, true},
		{[]string{"LMPOP", "3", "a", "LEFT"}, []string{Unknown}, true},
		{[]string{"PFCOUNT", "h"}, []string{"h"}, true},
		{[]string{"TIME"}, nil, false},
		{[]string{"PUBLISH", "ch", "m"}, []string{Unknown}, true},
	} {
		keys, write := Keys(tc.args)
		if !slices.Equal(keys, tc.keys) || write != tc.write {
			t.Errorf("%q: keys %q, write %v; want %q, %v", tc.args, keys, write, tc.keys, tc.write)
		}
	}
}

// TestDataCommands checks the table's answers to the manifest: which
// commands a step may send, and where their keys stand.
func TestDataCommands(t *testing.T) {
	for _, tc := range []struct {
		args []string
		data bool
		idx  []int
		ok   bool
	}{
		{[]string{"get", "k"}, true, []int{1}, true},
		{[]string{"MSET", "a", "1", "b", "2"}, true, []int{1, 3}, true},
		{[]string{"ZMPOP", "1", "z", "MIN"}, true, []int{2}, true},
		{[]string{"ZMPOP", "x", "z", "MIN"}, true, nil, false},
		{[]string{"RENAME", "a", "b"}, true, []int{1, 2}, true},
		{[]string{"PING"}, true, nil, true},
		{[]string{"PUBLISH", "ch", "m"}, true, nil, true},
		{[]string{"CONFIG", "SET", "x", "y"}, false, nil, true},
		{[]string{"MULTI"}, false, nil, true},
		{[]string{"EVAL", "return 1", "0"}, false, nil, true},
		{[]string{"XINFO", "STREAM", "s"}, false, []int{2}, true},
		{[]string{"XINFO", "HELP"}, false, nil, true},
	} {
		if got := DataCommand(tc.args[0]); got != tc.data {
			t.Errorf("DataCommand(%q) = %v, want %v", tc.args[0], got, tc.data)
		}
		idx, ok := KeyIndexes(tc.args)
		if !slices.Equal(idx, tc.idx) || ok != tc.ok {
			t.Errorf("KeyIndexes(%q) = %v, %v; want %v, %v", tc.args, idx, ok, tc.idx, tc.ok)
		}
	}
}

// TestKnown checks which commands the table says it knows the keys of:
// the explorer turns its state cache off for any other.
func TestKnown(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		known bool
	}{
		{[]string{"GET", "k"}, true},
		{[]string{"XINFO", "STREAM", "s"}, true},
		{[]string{"XINFO", "HELP"}, false},
		{[]string{"MULTI"}, true},
		{[]string{"WATCH", "k"}, true},
		{[]string{"EVALSHA", "abc", "1", "k"}, true},
		{[]string{"PUBLISH", "ch", "m"}, true},
		{[]string{"CONFIG", "SET", "x", "y"}, false},
		{[]string{"FLUSHALL"}, false},
		{nil, false},
	} {
		if got := Known(tc.args); got != tc.known {
			t.Errorf("Known(%q) = %v, want %v", tc.args, got, tc.known)
		}
	}
}

func TestScriptNames(t *testing.T) {
	src := "return redis.call('GET', KEYS[1])"
	sum := sha1.Sum([]byte(src))
	h := hex.EncodeToString(sum[:])
	if got := ScriptName(h); got != "script "+h[:8] {
		t.Errorf("an unknown script by SHA1: %q", got)
	}
	if got := ScriptName(src); got != "script "+h[:8] {
		t.Errorf("an unknown script by source: %q, want the same name as by SHA1", got)
	}
	Register("get.lua", h)
	for _, x := range []string{h, src} {
		if got := ScriptName(x); got != "get.lua" {
			t.Errorf("a registered script: %q", got)
		}
	}
	if got := Describe([]string{"EVALSHA", h, "1", "{ns}:lock:L", "tok"}, func(k string) string {
		return strings.TrimPrefix(k, "{ns}:")
	}); got != "EVAL get.lua lock:L" {
		t.Errorf("Describe: %q", got)
	}
	if got := Show([]string{"EVALSHA", h, "1", "{ns}:lock:L", "0123456789abcdef0123"}, func(k string) string {
		return strings.TrimPrefix(k, "{ns}:")
	}); got != "EVALSHA ‹get.lua› 1 lock:L 01234567…" {
		t.Errorf("Show: %q", got)
	}
}

func TestReadLock(t *testing.T) {
	isLock := func(k string) bool { return strings.HasPrefix(k, "lock:") }
	for _, tc := range []struct {
		args       []string
		value, err string
		want       Lock
		ok         bool
	}{
		{[]string{"set", "lock:L", "tok", "NX", "PX", "10000"}, "OK", "",
			Lock{Op: Acquire, Key: "lock:L", How: "SET NX PX", Token: "tok", TTL: 10 * time.Second, NX: true}, true},
		{[]string{"set", "lock:L", "tok", "NX", "PX", "10000"}, "(nil)", "",
			Lock{Op: AcquireFailed, Key: "lock:L", How: "SET NX PX", Token: "tok", TTL: 10 * time.Second, NX: true}, true},
		{[]string{"set", "lock:L", "tok", "NX", "GET", "EX", "3"}, "(nil)", "",
			Lock{Op: Acquire, Key: "lock:L", How: "SET NX GET EX", Token: "tok", TTL: 3 * time.Second, NX: true}, true},
		{[]string{"setnx", "lock:L", "tok"}, "true", "", Lock{Op: Acquire, Key: "lock:L", How: "SETNX", Token: "tok", NX: true}, true},
		{[]string{"expire", "lock:L", "5"}, "true", "", Lock{Op: Lease, Key: "lock:L", How: "EXPIRE", TTL: 5 * time.Second}, true},
		{[]string{"expire", "lock:L", "5"}, "false", "", Lock{}, false},
		{[]string{"del", "lock:L"}, "1", "", Lock{Op: Delete, Key: "lock:L", How: "DEL", Done: true}, true},
		{[]string{"del", "other"}, "1", "", Lock{}, false},
		{[]string{"set", "lock:L", "tok"}, "", "READONLY", Lock{}, false},
		{[]string{"evalsha", "feed", "1", "lock:L", "tok", "100"}, "1", "", Lock{}, false},
	} {
		got, ok := ReadLock(tc.args, tc.value, tc.err, isLock)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%q → %q %q: %+v %v, want %+v %v", tc.args, tc.value, tc.err, got, ok, tc.want, tc.ok)
		}
	}
}

func TestBound(t *testing.T) {
	for _, tt := range []struct {
		s    string
		n    int
		want string
	}{
		{"", 4, ""},
		{"abcd", 4, "abcd"},
		{"abcde", 4, "abcd…(5 bytes)"},
		{"\x00\x00\x00", 1, "\x00…(3 bytes)"},
		{"aé", 2, "a…(3 bytes)"}, // never inside a UTF-8 sequence
		{"abc", 0, "…(3 bytes)"},
	} {
		if got := Bound(tt.s, tt.n); got != tt.want {
			t.Errorf("Bound(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}
