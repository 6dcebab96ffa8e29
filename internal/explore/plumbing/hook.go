package plumbing

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockmarket/lockmarket/internal/redis/rediscmd"
	"github.com/redis/go-redis/v9"
)

// Hook is the go-redis hook of every client of an explorer: it parks each
// command and pipeline the go-redis client sends, whatever its context,
// for the client of the current schedule its slot names, until the
// scheduler releases it. A parked command has been
// sent, as far as its client knows: it is on the wire, and the end of its
// context no longer recalls it. Node names the node the go-redis client
// talks to, for a target of several nodes ("" for the one server).
type Hook struct {
	Node string
	Gate gate
}

// gate holds each command a hooked client sends until its turn (slot).
type gate interface {
	Hold(node string, cmds []redis.Cmder) (done func(err error, sent time.Time), err error)
}

// DialHook dials as go-redis does: connections are not held.
func (Hook) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook holds each command until the gate lets it go.
func (h Hook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		return process(
			h.Gate, h.Node, []redis.Cmder{cmd},
			func([]redis.Cmder) error { return next(context.WithoutCancel(ctx), cmd) },
		)
	}
}

// ProcessPipelineHook holds each pipeline, as one, until the gate lets it
// go.
func (h Hook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		return process(
			h.Gate, h.Node, cmds,
			func(cmds []redis.Cmder) error { return next(context.WithoutCancel(ctx), cmds) },
		)
	}
}

func process(g gate, node string, cmds []redis.Cmder, next func([]redis.Cmder) error) error {
	if !slices.ContainsFunc(cmds, func(c redis.Cmder) bool { return !housekeeping(c.Name()) }) {
		return next(cmds) // a connection's own set-up, inside a released command
	}
	// A pipeline with housekeeping in it (UNWATCH, then the release of a
	// lock, say) is ordered like any other: only what it does besides
	// counts, and that must wait for its turn.
	done, err := g.Hold(node, cmds)
	if err != nil {
		// Never sent; an UNWATCH among it still goes, so that the
		// connection goes back to its pool with no WATCH armed.
		var own []redis.Cmder
		for _, cmd := range cmds {
			if housekeeping(cmd.Name()) {
				own = append(own, cmd)
			} else {
				cmd.SetErr(err)
			}
		}
		if len(own) > 0 {
			next(own)
		}
		return err
	}
	sent := time.Now()
	err = next(cmds)
	done(err, sent)
	return err
}

// housekeeping names the commands a connection sends for itself, and
// UNWATCH, which touches no key: go-redis sends it when a transaction
// ends without EXEC, and it must reach the server even when the client
// is being stopped, or its connection would go back to the pool with a
// WATCH armed and abort a later schedule's transaction.
func housekeeping(name string) bool {
	switch strings.ToLower(name) {
	case "hello", "client", "auth", "select", "readonly", "unwatch":
		return true
	}
	return false
}

// Footprint is the keys a command or pipeline touches and whether it may
// write; rediscmd.Unknown ("*") stands for keys it does not name.
func Footprint(cmds []redis.Cmder) ([]string, bool) {
	return FootprintOf(Args(cmds))
}

// FootprintOf is Footprint of the commands' arguments as Args writes them.
func FootprintOf(args [][]string) ([]string, bool) {
	var keys []string
	write := false
	for _, a := range args {
		ks, w := rediscmd.Keys(a)
		keys, write = append(keys, ks...), write || w
	}
	return keys, write
}

// WrittenOf is the keys among FootprintOf's that a command of the
// pipeline args may write (rediscmd.Unknown for keys it does not name).
func WrittenOf(args [][]string) []string {
	var keys []string
	for _, a := range args {
		if ks, w := rediscmd.Keys(a); w {
			keys = append(keys, ks...)
		}
	}
	return keys
}

// Args is each command's arguments as text (ArgStrings), for a pipeline.
func Args(cmds []redis.Cmder) [][]string {
	out := make([][]string, len(cmds))
	for i, c := range cmds {
		out[i] = ArgStrings(c)
	}
	return out
}

// ArgStrings is a command's arguments as text, each as fmt.Sprint
// writes it.
func ArgStrings(c redis.Cmder) []string {
	args := c.Args()
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = argString(a)
	}
	return out
}

// argString is fmt.Sprint(a), written without fmt for the kinds of
// argument go-redis sends most (it runs for every command of every step).
func argString(a any) string {
	switch a := a.(type) {
	case string:
		return a
	case int:
		return strconv.Itoa(a)
	case int64:
		return strconv.FormatInt(a, 10)
	case int32:
		return strconv.FormatInt(int64(a), 10)
	case uint64:
		return strconv.FormatUint(a, 10)
	case uint32:
		return strconv.FormatUint(uint64(a), 10)
	case bool:
		return strconv.FormatBool(a)
	}
	return fmt.Sprint(a)
}

// MaxReplyBytes bounds a reply, or an error's text, as the explorer keeps
// it for its steps, views and reports: a longer one is cut there, with a
// "…(N bytes)" marker (rediscmd.Bound). The code under test gets its
// replies whole; only what is shown of them is cut.
const MaxReplyBytes = 512

// ReplyOf is a command's reply as text, or its error, whole.
func ReplyOf(c redis.Cmder, err error) (value, errText string) {
	e := c.Err()
	if e == nil {
		e = err
	}
	switch {
	case errors.Is(e, redis.Nil):
		return "(nil)", ""
	case errors.Is(e, redis.TxFailedErr):
		return "", "aborted"
	case e != nil:
		return "", e.Error()
	}
	switch c := c.(type) {
	case *redis.StatusCmd:
		return c.Val(), ""
	case *redis.StringCmd:
		return c.Val(), ""
	case *redis.IntCmd:
		return strconv.FormatInt(c.Val(), 10), ""
	case *redis.BoolCmd:
		return strconv.FormatBool(c.Val()), ""
	case *redis.DurationCmd:
		if d := c.Val(); d < 0 {
			return strconv.FormatInt(int64(d), 10), ""
		}
		return strconv.FormatInt(c.Val().Milliseconds(), 10) + " ms", ""
	case *redis.Cmd:
		return fmt.Sprint(c.Val()), ""
	}
	s := c.String()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		s = s[i+2:]
	}
	return s, ""
}
