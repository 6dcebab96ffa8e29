package timeline

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Hook is a go-redis hook that records, into the Recorder a command's
// context names (Recorder.As), each command sent and its reply. Commands
// sent with a context that names no client pass untouched, so a client
// can carry the hook for good. Add it with client.AddHook(timeline.Hook{}).
type Hook struct{}

// DialHook implements redis.Hook.
func (Hook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

// ProcessHook implements redis.Hook.
func (Hook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r, client, ok := From(ctx)
		if !ok || housekeeping(cmd.Name()) {
			return next(ctx, cmd)
		}
		done := r.commands(client, []cmdView{sent(cmd)})
		err := next(ctx, cmd)
		done([]cmdView{received(cmd, err)})
		return err
	}
}

// ProcessPipelineHook implements redis.Hook; a MULTI/EXEC arrives here
// with its MULTI and EXEC.
func (Hook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r, client, ok := From(ctx)
		if !ok || housekeeping(cmds[0].Name()) {
			return next(ctx, cmds)
		}
		views := make([]cmdView, len(cmds))
		for i, c := range cmds {
			views[i] = sent(c)
		}
		done := r.commands(client, views)
		err := next(ctx, cmds)
		for i, c := range cmds {
			views[i] = received(c, nil)
		}
		done(views)
		return err
	}
}

// housekeeping names the commands a connection sends for itself.
func housekeeping(name string) bool {
	switch strings.ToLower(name) {
	case "hello", "client", "auth", "select", "readonly":
		return true
	}
	return false
}

// cmdView is a command as recorded: its arguments, then its reply.
type cmdView struct {
	args       []string
	value, err string
}

func sent(c redis.Cmder) cmdView {
	args := c.Args()
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = fmt.Sprint(a)
	}
	return cmdView{args: out}
}

// received is the reply of c: its value as text, "(nil)" for a nil reply,
// "aborted" as the error of a transaction a WATCH aborted. err is what
// the next hook returned, for a command whose own error is set after the
// hooks ran.
func received(c redis.Cmder, err error) cmdView {
	if c.Err() != nil || err == nil {
		err = c.Err()
	}
	switch {
	case errors.Is(err, redis.Nil):
		return cmdView{value: "(nil)"}
	case errors.Is(err, redis.TxFailedErr):
		return cmdView{err: "aborted"}
	case err != nil:
		return cmdView{err: err.Error()}
	}
	var v string
	switch c := c.(type) {
	case *redis.StatusCmd:
		v = c.Val()
	case *redis.StringCmd:
		v = c.Val()
	case *redis.IntCmd:
		v = strconv.FormatInt(c.Val(), 10)
	case *redis.BoolCmd:
		v = strconv.FormatBool(c.Val())
	case *redis.FloatCmd:
		v = strconv.FormatFloat(c.Val(), 'f', -1, 64)
	case *redis.DurationCmd:
		// As a number: -1 and -2 as Redis sent them, a TTL in ms.
		if d := c.Val(); d < 0 {
			v = strconv.FormatInt(int64(d), 10)
		} else {
			v = strconv.FormatInt(d.Milliseconds(), 10) + " ms"
		}
	case *redis.Cmd:
		v = fmt.Sprint(c.Val())
	case *redis.SliceCmd:
		v = fmt.Sprint(c.Val())
	case *redis.StringSliceCmd:
		v = fmt.Sprint(c.Val())
	case *redis.MapStringStringCmd:
		v = fmt.Sprint(c.Val())
	default:
		s := c.String()
		if i := strings.LastIndex(s, ": "); i >= 0 {
			s = s[i+2:]
		}
		v = s
	}
	return cmdView{value: clip(v, 60)}
}
