package market

import (
	"context"
	"time"
)

// Trace is a set of hooks an operation calls as it runs, carried in its
// context (WithTrace), in the manner of net/http/httptrace. It serves the
// tools that measure an operation or stop it at a chosen point (a
// simulator, a fault run, a test); nothing needs it to use the market. The
// hooks run on the operation's goroutine; a nil hook is not called.
type Trace struct {
	// BeforeCommit is called just before each commit of an operation
	// (under Coarse and Fine, while its lock is held) with its strategy
	// and its name, "list" or "purchase".
	BeforeCommit func(ctx context.Context, s Strategy, op string)
	// Exec is called after each EXEC of the Watch strategy that Redis
	// ran, committed or aborted by WATCH, with its conflict window: the
	// time from the WATCH's execution in Redis to the EXEC's, in which a
	// write by another client to a watched key aborts the EXEC. The client
	// cannot see it; it is estimated as the mean of "WATCH sent to EXEC
	// answered" and "WATCH answered to EXEC sent": the first counts the
	// WATCH's way out and the EXEC's way back too much, the second the
	// WATCH's way back and the EXEC's way out too little, so the mean is
	// the window when both round trips split alike between the way out
	// and the way back.
	Exec func(window time.Duration)
}

type traceKey struct{}

// WithTrace returns a context carrying t: operations run with it call
// t's hooks. A trace ctx already carries is kept: its hooks are called
// too, after t's.
func WithTrace(ctx context.Context, t *Trace) context.Context {
	if old := traceFrom(ctx); old != nil {
		t = t.compose(old)
	}
	return context.WithValue(ctx, traceKey{}, t)
}

func traceFrom(ctx context.Context) *Trace {
	t, _ := ctx.Value(traceKey{}).(*Trace)
	return t
}

// compose returns a trace whose hooks call t's, then old's.
func (t *Trace) compose(old *Trace) *Trace {
	c := *t
	if old.BeforeCommit != nil {
		c.BeforeCommit = func(ctx context.Context, s Strategy, op string) {
			if t.BeforeCommit != nil {
				t.BeforeCommit(ctx, s, op)
			}
			old.BeforeCommit(ctx, s, op)
		}
	}
	if old.Exec != nil {
		c.Exec = func(window time.Duration) {
			if t.Exec != nil {
				t.Exec(window)
			}
			old.Exec(window)
		}
	}
	return &c
}

// beforeCommit calls the BeforeCommit hook of ctx's trace, if any.
func beforeCommit(ctx context.Context, s Strategy, op string) {
	if t := traceFrom(ctx); t != nil && t.BeforeCommit != nil {
		t.BeforeCommit(ctx, s, op)
	}
}

// traceExec calls the Exec hook of ctx's trace, if any.
func traceExec(ctx context.Context, window time.Duration) {
	if t := traceFrom(ctx); t != nil && t.Exec != nil {
		t.Exec(window)
	}
}
