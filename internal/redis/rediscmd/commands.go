package rediscmd

import (
	"strconv"
	"strings"
)

// place is where a command's keys stand among its arguments (args[0] is
// its name).
type place int

const (
	noKeys      place = iota + 1 // none
	firstKey                     // args[1]
	allKeys                      // args[1:]
	twoKeys                      // args[1:3]
	pairedKeys                   // args[1], args[3], ...
	countedKeys                  // args[1] is how many keys follow it
	subKey                       // args[2], after a subcommand (args[1])
)

// command is what the table knows of a data command.
type command struct {
	keys place
	// read: it never writes.
	read bool
	// beyond: it reaches clients beyond every key (a message published).
	beyond bool
}

// subcommands is the table's part for the commands whose keys depend on
// their subcommand, by "name subcommand" (XINFO STREAM key): the other
// subcommands of such a command (XINFO HELP) are not in the table.
var subcommands = map[string]command{}

// commands is the one table of the data commands: the commands on the
// keys they name, and a few that name none (PING, ECHO, TIME, PUBLISH),
// each with where its keys stand and whether it only reads. The explorer
// orders and names commands by it, and a recipe manifest's steps may send
// only the commands it holds. A command it does not hold (a script's call
// apart) touches Unknown keys and may write.
var commands = map[string]command{}

func init() {
	for _, g := range []struct {
		c     command
		names string
	}{
		{command{keys: firstKey, read: true}, "get strlen getrange substr type ttl pttl " +
			"expiretime pexpiretime hget hmget hexists hlen hkeys hvals hgetall hstrlen " +
			"hrandfield httl hpttl hexpiretime hpexpiretime llen lrange lindex lpos " +
			"sismember smismember smembers scard srandmember zscore zmscore zcard zcount " +
			"zrange zrangebyscore zrevrange zrevrangebyscore zrank zrevrank zlexcount " +
			"zrangebylex zrevrangebylex zrandmember getbit bitcount bitpos xlen xrange " +
			"xrevrange"},
		{command{keys: firstKey}, "set setnx setex psetex getset getdel getex append incr " +
			"incrby incrbyfloat decr decrby setrange expire pexpire expireat pexpireat " +
			"persist hset hsetnx hmset hdel hincrby hincrbyfloat hexpire hpexpire hexpireat " +
			"hpexpireat hpersist hgetdel hgetex hsetex lpush rpush lpushx rpushx lpop rpop " +
			"lset lrem ltrim linsert sadd srem spop zadd zrem zincrby zremrangebyscore " +
			"zremrangebyrank zremrangebylex zpopmin zpopmax setbit pfadd xadd xdel xtrim"},
		{command{keys: allKeys, read: true}, "exists touch mget sinter sunion sdiff"},
		// PFCOUNT may write: it caches the count it computes in the key.
		{command{keys: allKeys}, "del unlink sinterstore sunionstore sdiffstore pfcount"},
		{command{keys: twoKeys, read: true}, "lcs"},
		{command{keys: twoKeys}, "rename renamenx smove rpoplpush lmove zrangestore"},
		{command{keys: pairedKeys}, "mset msetnx"},
		{command{keys: countedKeys, read: true}, "sintercard"},
		{command{keys: countedKeys}, "lmpop zmpop"},
		{command{keys: noKeys, read: true}, "ping echo time"},
		{command{keys: noKeys, beyond: true}, "publish spublish"},
		{command{keys: subKey, read: true}, "xinfo:stream xinfo:groups xinfo:consumers " +
			"object:encoding object:refcount object:idletime object:freq memory:usage"},
	} {
		for _, n := range strings.Fields(g.names) {
			if name, sub, ok := strings.Cut(n, ":"); ok {
				subcommands[name+" "+sub] = g.c
				continue
			}
			commands[n] = g.c
		}
	}
}

// lookup is what the table knows of the command args sends, and whether
// it holds it.
func lookup(args []string) (command, bool) {
	name := Name(args)
	if c, ok := commands[name]; ok {
		return c, true
	}
	if len(args) > 1 {
		c, ok := subcommands[name+" "+strings.ToLower(args[1])]
		return c, ok
	}
	return command{}, false
}

// Known reports whether the table holds the command args sends, or it is
// one Keys reads without it (a transaction's MULTI, EXEC, DISCARD, WATCH,
// UNWATCH, a script's call): whether Keys names its keys, but for a
// script called without KEYS and a message published.
func Known(args []string) bool {
	switch Name(args) {
	case "multi", "exec", "discard", "watch", "unwatch",
		"eval", "evalsha", "eval_ro", "evalsha_ro", "fcall":
		return true
	}
	_, ok := lookup(args)
	return ok
}

// DataCommand reports whether name (in any case) is a command of the
// table: one on the keys it names, or one that names none and changes no
// key (PING, ECHO, TIME, PUBLISH). Anything else (a transaction, a
// script, what changes the server: CONFIG, FLUSHALL, SCRIPT, ...) is not,
// nor is a command whose keys depend on its subcommand (XINFO).
func DataCommand(name string) bool {
	_, ok := commands[strings.ToLower(name)]
	return ok
}

// KeyIndexes is where a data command's keys stand among its arguments
// (args[0] its name), none for a command the table does not hold; ok is
// false when a count of keys is not a number within the arguments.
func KeyIndexes(args []string) (idx []int, ok bool) {
	c, _ := lookup(args)
	switch c.keys {
	case subKey:
		if len(args) > 2 {
			idx = []int{2}
		}
	case firstKey:
		if len(args) > 1 {
			idx = []int{1}
		}
	case allKeys:
		for i := 1; i < len(args); i++ {
			idx = append(idx, i)
		}
	case twoKeys:
		for i := 1; i < min(3, len(args)); i++ {
			idx = append(idx, i)
		}
	case pairedKeys:
		for i := 1; i < len(args); i += 2 {
			idx = append(idx, i)
		}
	case countedKeys:
		if len(args) < 2 {
			return nil, true
		}
		n, err := strconv.Atoi(args[1])
		if err != nil || n < 0 || 2+n > len(args) {
			return nil, false
		}
		for i := 2; i < 2+n; i++ {
			idx = append(idx, i)
		}
	}
	return idx, true
}
