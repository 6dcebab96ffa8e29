package rediscmd

import (
	"regexp"
	"strings"
)

// A command's part in a key's time to live, for a clock that advances by
// shortening the leases on the server (PEXPIRE): a key a transaction
// WATCHes keeps its lease as it was until a command could tell (see
// package sched), so that time passing does not count as a change of it.

// blindToTTL is the commands that never read a key's time to live nor set
// it: the reads of data, the writes that keep the time to live (INCR,
// HSET, ZADD, ...), the deletes, a transaction's words. SET is apart (see
// SeesTTL).
var blindToTTL = map[string]bool{}

// removers is the commands of blindToTTL that may delete a key: a delete,
// or the removal of the last member of a set, hash, list or sorted set.
var removers = map[string]bool{}

func init() {
	for _, n := range strings.Fields("multi exec discard watch unwatch ping echo time " +
		"get strlen getrange substr type hget hmget hexists hlen hkeys hvals hgetall hstrlen " +
		"hrandfield llen lrange lindex lpos sismember smismember smembers scard srandmember " +
		"zscore zmscore zcard zcount zrange zrangebyscore zrevrange zrevrangebyscore zrank " +
		"zrevrank zlexcount zrangebylex zrevrangebylex zrandmember getbit bitcount bitpos " +
		"xlen xrange xrevrange xinfo exists touch mget lcs sinter sunion sdiff sintercard " +
		"append incr incrby incrbyfloat decr decrby setrange hset hsetnx hmset hincrby " +
		"hincrbyfloat lpush rpush lpushx rpushx lset linsert sadd zadd zincrby setbit " +
		"pfadd pfcount xadd xdel xtrim") {
		blindToTTL[n] = true
	}
	for _, n := range strings.Fields("del unlink getdel hdel lpop rpop lrem ltrim srem spop " +
		"zrem zremrangebyscore zremrangebyrank zremrangebylex zpopmin zpopmax lmpop zmpop") {
		blindToTTL[n], removers[n] = true, true
	}
}

// SeesTTL reports whether the command args may read or set the time to
// live of a key it touches: PTTL, EXPIRE, PERSIST, a SET (but SET NX
// without KEEPTTL, which on a key that exists does nothing), RENAME, a
// command the table does not know, a script but one sent by EVAL whose
// every call is of a command blind to it (ScriptSeesTTL).
func SeesTTL(args []string) bool {
	switch name := Name(args); name {
	case "set":
		nx, keep := false, false
		for _, a := range args[min(3, len(args)):] {
			switch strings.ToLower(a) {
			case "nx":
				nx = true
			case "keepttl":
				keep = true
			}
		}
		return !nx || keep
	case "eval", "eval_ro":
		return len(args) < 2 || ScriptSeesTTL(args[1])
	default:
		return !blindToTTL[name]
	}
}

// Removes reports whether the command args may delete a key it touches
// (DEL, the removal of a collection's last member, a script): a key whose
// lease was kept may be gone after it.
func Removes(args []string) bool {
	switch name := Name(args); name {
	case "eval", "eval_ro", "evalsha", "evalsha_ro", "fcall":
		return true
	default:
		return removers[name]
	}
}

var (
	// scriptCall finds each call of a command from a script.
	scriptCall = regexp.MustCompile(`\b(?:redis|server)\s*\.\s*p?call\b`)
	// literalCall is a call whose command is a string written out.
	literalCall = regexp.MustCompile(
		`\b(?:redis|server)\s*\.\s*p?call\s*\(\s*(?:"([A-Za-z_]+)"|'([A-Za-z_]+)')`)
)

// ScriptSeesTTL reports whether a Lua script may read or set the time to
// live of a key: unless each of its calls names its command as a string
// written out, and each of those commands is blind to it (SET too: a
// script's SET may give a key a new lease).
func ScriptSeesTTL(source string) bool {
	calls := scriptCall.FindAllStringIndex(source, -1)
	named := literalCall.FindAllStringSubmatch(source, -1)
	if len(calls) != len(named) {
		return true
	}
	for _, m := range named {
		if !blindToTTL[strings.ToLower(m[1]+m[2])] {
			return true
		}
	}
	return false
}

// IsScript reports whether args calls a script or a function (EVAL,
// EVALSHA, their _RO forms, FCALL).
func IsScript(args []string) bool {
	switch Name(args) {
	case "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro":
		return true
	}
	return false
}
