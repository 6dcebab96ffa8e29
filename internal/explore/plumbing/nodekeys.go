package plumbing

import (
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// NodeName is the name of the i-th node of a target: "n1", "n2"...
func NodeName(i int) string { return "n" + strconv.Itoa(i+1) }

// OnNode qualifies keys with the node they are on; "*" (keys unknown)
// stays as it is.
func OnNode(node string, keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		if k == "*" {
			out[i] = k
		} else {
			out[i] = k + "@" + node
		}
	}
	return out
}

// SplitNode splits a key qualified by OnNode into the key and its node
// ("" for a key of the one server).
func SplitNode(k string) (key, node string) {
	i := strings.LastIndex(k, "@n")
	if i < 0 {
		return k, ""
	}
	if _, err := strconv.Atoi(k[i+2:]); err != nil {
		return k, ""
	}
	return k[:i], k[i+1:]
}

// CommandNode is the node a command described by gate goes to ("n2 SET
// NX PX lock:L"), or "".
func CommandNode(desc string) string {
	node, _, _ := strings.Cut(desc, " ")
	if _, n := SplitNode("@" + node); n != node {
		return ""
	}
	return node
}

// NodeArgs is a command's arguments with each key of the namespace ns
// qualified with node, so that a timeline tells the nodes' locks apart.
func NodeArgs(ns, node string, args []string) []string {
	out := slices.Clone(args)
	for i, a := range out {
		if i > 0 && strings.HasPrefix(a, ns) {
			out[i] = a + "@" + node
		}
	}
	return out
}

// DropScript deletes every key matching ARGV[1], and returns them.
var DropScript = redis.NewScript(`
local gone = redis.call('KEYS', ARGV[1])
for _, k in ipairs(gone) do redis.call('DEL', k) end
return gone`)
