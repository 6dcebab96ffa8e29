package pausedholder

// A pause at the commit: the market calls its trace's BeforeCommit hook
// just before each commit (for the lock strategies, while the lock is
// held), and a run that wants to pause a client there puts its hook in
// that client's context with WithBeforeCommit, a shorthand for a
// markettrace.Trace. It is a tool for demonstrating failures (the gallery, the
// fault runs, tests), not part of using the market.

import (
	"context"

	"github.com/lockmarket/lockmarket/market/markettrace"
)

// Hook is called with the operation's context, its strategy ("watch",
// "coarse", "fine", "lua") and its name ("list" or "purchase").
type Hook func(ctx context.Context, strategy, op string)

// WithBeforeCommit returns a context that carries h: operations run with it
// call h just before they commit. A nil h changes nothing.
func WithBeforeCommit(ctx context.Context, h Hook) context.Context {
	if h == nil {
		return ctx
	}
	return markettrace.WithTrace(ctx, &markettrace.Trace{BeforeCommit: h})
}
