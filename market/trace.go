package market

import (
	"context"
	"time"

	"github.com/lockmarket/lockmarket/market/internal/plug"
)

// The tools' hooks (markettrace.Trace) travel in an operation's context;
// these call them.

// beforeCommit calls the BeforeCommit hook of ctx's trace, if any.
func beforeCommit(ctx context.Context, s Strategy, op string) {
	if t := plug.TraceFrom(ctx); t != nil && t.BeforeCommit != nil {
		t.BeforeCommit(ctx, string(s), op)
	}
}

// traceExec calls the Exec hook of ctx's trace, if any.
func traceExec(ctx context.Context, window time.Duration) {
	if t := plug.TraceFrom(ctx); t != nil && t.Exec != nil {
		t.Exec(window)
	}
}
