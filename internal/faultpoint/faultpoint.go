// Package faultpoint lets a fault-injection run stop an operation at a
// chosen point: the market calls BeforeCommit just before each commit
// (for the lock strategies, while the lock is held), and a run that wants
// to pause a client there puts its hook in that client's context with
// WithBeforeCommit. Without a hook, BeforeCommit does nothing.
//
// It is internal on purpose: a pause at the commit is a tool for
// demonstrating failures (the gallery, the fault runs, tests), not part of
// the market's API.
package faultpoint

import "context"

// Hook is called with the operation's context, its strategy ("watch",
// "coarse", "fine", "lua") and its name ("list" or "purchase").
type Hook func(ctx context.Context, strategy, op string)

type hookKey struct{}

// WithBeforeCommit returns a context that carries h: operations run with it
// call h just before they commit.
func WithBeforeCommit(ctx context.Context, h Hook) context.Context {
	return context.WithValue(ctx, hookKey{}, h)
}

// BeforeCommit calls the hook that ctx carries, if any.
func BeforeCommit(ctx context.Context, strategy, op string) {
	if h, ok := ctx.Value(hookKey{}).(Hook); ok && h != nil {
		h(ctx, strategy, op)
	}
}
