package rediscmd

import (
	"strings"
	"testing"
)

func TestSeesTTL(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		want bool
	}{
		{"GET k", false},
		{"PTTL k", true},
		{"TTL k", true},
		{"EXPIRETIME k", true},
		{"PEXPIRE k 10", true},
		{"PERSIST k", true},
		{"SET k v", true},
		{"SET k v PX 10", true},
		{"SET k v NX PX 10", false},
		{"set k v px 10 nx get", false},
		{"SET k v NX KEEPTTL", true},
		{"SET k v XX", true},
		{"GETEX k PX 10", true},
		{"RENAME k j", true},
		{"INCR k", false},
		{"HINCRBY h f 1", false},
		{"ZADD z 1 m", false},
		{"DEL k", false},
		{"WATCH k", false},
		{"EXEC", false},
		{"NOSUCH k", true},
		{"EVALSHA 0123 1 k", true},
		{`EVAL return 1 0`, false},
	} {
		if got := SeesTTL(strings.Fields(tc.cmd)); got != tc.want {
			t.Errorf("SeesTTL(%s) = %v, want %v", tc.cmd, got, tc.want)
		}
	}
}

func TestScriptSeesTTL(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      bool
	}{
		{"release", `if redis.call("get", KEYS[1]) == ARGV[1] then
	return redis.call("del", KEYS[1])
end
return 0`, false},
		{"extend", `if redis.call("get", KEYS[1]) == ARGV[1] then
	return redis.call("pexpire", KEYS[1], ARGV[2])
end`, true},
		{"reads the lease", `return redis.pcall('PTTL', KEYS[1])`, true},
		{"sets a lease", `return redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])`, true},
		{"command from an argument", `return redis.call(ARGV[1], KEYS[1])`, true},
		{"call kept in a variable", `local c = redis.call; return c('pttl', KEYS[1])`, true},
		{"no call", `return ARGV[1]`, false},
		{"blind writes", `redis.call('HINCRBY', KEYS[1], 'n', 1); return server.call('zadd', KEYS[2], 1, 'm')`, false},
	} {
		if got := ScriptSeesTTL(tc.src); got != tc.want {
			t.Errorf("%s: ScriptSeesTTL = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestRemoves(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		want bool
	}{
		{"DEL k", true}, {"SREM s m", true}, {"EVALSHA 0123 1 k", true}, {"SET k v NX", false},
		{"GET k", false}, {"HINCRBY h f 1", false},
	} {
		if got := Removes(strings.Fields(tc.cmd)); got != tc.want {
			t.Errorf("Removes(%s) = %v, want %v", tc.cmd, got, tc.want)
		}
	}
}
