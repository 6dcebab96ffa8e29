// Package plug holds the market's plug-in points as package market reads
// them. Package market/markettrace is the only one that sets them; its
// documentation says what each one does.
package plug

import (
	"context"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Trace is markettrace.Trace as the market calls it.
type Trace struct {
	BeforeCommit func(ctx context.Context, strategy, op string)
	Exec         func(window time.Duration)
}

type traceKey struct{}

// WithTrace returns a context carrying t, after any trace ctx carries.
func WithTrace(ctx context.Context, t *Trace) context.Context {
	if old := TraceFrom(ctx); old != nil {
		t = t.compose(old)
	}
	return context.WithValue(ctx, traceKey{}, t)
}

// TraceFrom is the trace ctx carries, or nil.
func TraceFrom(ctx context.Context) *Trace {
	t, _ := ctx.Value(traceKey{}).(*Trace)
	return t
}

// compose returns a trace whose hooks call t's, then old's.
func (t *Trace) compose(old *Trace) *Trace {
	c := *t
	if old.BeforeCommit != nil {
		c.BeforeCommit = func(ctx context.Context, s, op string) {
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

// Form is markettrace.ClientForm.
type Form string

// The client forms.
const (
	Lean Form = "lean"
	Book Form = "book"
)

// Lease is markettrace.Lease.
type Lease struct {
	Token   string
	Waits   int
	Release func(ctx context.Context) error
}

// LockFunc is markettrace.LockFunc.
type LockFunc func(ctx context.Context, key string, ttl time.Duration) (Lease, error)

// Settings are one market's plug-in points.
type Settings struct {
	Form Form
	Lock LockFunc
	// Redis is the market's client, for its pool's statistics.
	Redis redis.UniversalClient
}

// Of returns the settings of m, a *market.Market. Package market sets it
// when it is loaded; markettrace's options call it.
var Of func(m any) *Settings

// Member is the listing member of item sold by seller: "ITEM.SELLER".
func Member(item, seller string) string { return item + "." + seller }

// SplitMember splits "ITEM.SELLER".
func SplitMember(member string) (item, seller string, ok bool) {
	return strings.Cut(member, ".")
}
