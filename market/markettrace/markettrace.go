// Package markettrace holds what the tools around the market plug into it
// or read from it, in the manner of net/http/httptrace: hooks an
// operation calls as it runs (Trace), how its commands are grouped into
// round trips (ClientForm), the lock its Coarse and Fine strategies take
// (LockFunc), a listing's member, the statistics of its connection pool,
// the name of each of its keys (Keys).
// A simulator, a fault run or a test uses them; nothing needs them to use
// the market.
package markettrace

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/market"
	"github.com/lockmarket/lockmarket/market/internal/plug"
)

// Trace is a set of hooks an operation calls as it runs, carried in its
// context (WithTrace), in the manner of net/http/httptrace. It serves the
// tools that measure an operation or stop it at a chosen point (a
// simulator, a fault run, a test); nothing needs it to use the market. The
// hooks run on the operation's goroutine; a nil hook is not called.
type Trace struct {
	// BeforeCommit is called just before each commit of an operation
	// (under Coarse and Fine, while its lock is held) with its strategy
	// (its market.Strategy as a string) and its name, "list" or
	// "purchase".
	BeforeCommit func(ctx context.Context, strategy, op string)
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

// WithTrace returns a context carrying t: operations run with it call
// t's hooks. A trace ctx already carries is kept: its hooks are called
// too, after t's.
func WithTrace(ctx context.Context, t *Trace) context.Context {
	return plug.WithTrace(ctx, (*plug.Trace)(t))
}

// ClientForm is how a strategy's commands are grouped into round trips.
// Both forms run the same reads, checks and writes (the market's op.go) and keep every
// audited invariant; they differ in how long an operation takes, and so
// in how long a WATCH stays exposed to conflicting writes.
type ClientForm string

// The client forms.
const (
	// LeanClient pipelines: the WATCH (or the lock's acquisition) travels
	// with the reads, the release of a lock inside the commit's MULTI/EXEC.
	// An uncontended List or Purchase costs two round trips (Lua one).
	LeanClient ClientForm = "lean"
	// BookClient sends what the book's listings send, one command per
	// round trip, in their order: WATCH, then each read, then
	// MULTI...EXEC (listings 4.5 and 4.6); under Coarse and Fine, the
	// lock is taken in round trips of its own before, and released after
	// the commit, around the lock-guarded purchase of 6.2.3/6.2.4 with
	// its listing's bugs fixed
	// (the reads are sent after the WATCH, not through a pipeline that has
	// already run, and the buyer's and seller's "funds" fields are
	// incremented). What this market does beyond the book (a listing
	// count, a purchase's receipt, the seller's credit bound, operation
	// IDs) travels with the book's commands and adds no round trip. Lua is
	// one script per operation in both forms. The book's own lock with
	// timeout (6.2.5: SETNX, then EXPIRE, a TTL check and a 1 ms sleep
	// after each failed attempt; released by WATCH, GET, MULTI DEL EXEC)
	// is one of the flawed recipes, so the market does not take it
	// itself: the simulator supplies it with WithLockFunc. Without a
	// LockFunc the book form takes the default locking.Mutex, unpipelined.
	BookClient ClientForm = "book"
)

// ClientForms lists the forms, the default first.
var ClientForms = []ClientForm{LeanClient, BookClient}

// ParseClientForm parses a client form's name.
func ParseClientForm(s string) (ClientForm, error) {
	for _, f := range ClientForms {
		if string(f) == s {
			return f, nil
		}
	}
	return "", fmt.Errorf("%w: unknown client form %q (want lean or book)", market.ErrInvalid, s)
}

// WithClient sets the market's client form (default LeanClient).
func WithClient(f ClientForm) market.Option {
	return func(m *market.Market) { plug.Of(m).Form = plug.Form(f) }
}

// ClientFormOf is m's client form.
func ClientFormOf(m *market.Market) ClientForm { return ClientForm(plug.Of(m).Form) }

// Lease is one hold of the lock a Coarse or Fine operation runs under, as
// returned by a LockFunc.
type Lease struct {
	// Token is the value stored at the lock's key while this lease holds
	// the lock; empty if the lock stores none (then WithFencing cannot
	// check it).
	Token string
	// Waits is how many attempts failed before the lock was taken.
	Waits int
	// Release gives the lock back; it returns locking.ErrNotHeld if the
	// lease had been lost. Nil means there is nothing to release.
	Release func(ctx context.Context) error
}

// LockFunc takes the lock on key with a lease of ttl, waiting until ctx
// ends; it returns an error wrapping locking.ErrNotAcquired when it gave
// up.
type LockFunc func(ctx context.Context, key string, ttl time.Duration) (Lease, error)

// WithLockFunc makes the Coarse and Fine strategies take their locks with
// f instead of the default locking.Mutex, e.g. to run the market under one
// of the flawed recipes of package internal/flawed and watch what breaks.
// The operation is otherwise the same; only the default mutex can send its
// acquisition with the reads and its release with the commit, so f costs
// the round trips of its own commands.
func WithLockFunc(f LockFunc) market.Option {
	return func(m *market.Market) {
		plug.Of(m).Lock = func(ctx context.Context, key string, ttl time.Duration) (plug.Lease, error) {
			l, err := f(ctx, key, ttl)
			return plug.Lease(l), err
		}
	}
}

// PoolStats are the statistics of m's connection pool to Redis (nil when
// its client keeps none).
func PoolStats(m *market.Market) *redis.PoolStats { return plug.Of(m).Redis.PoolStats() }

// Member is the member of the market's sorted set that lists item sold by
// seller: "ITEM.SELLER".
func Member(item, seller string) string { return plug.Member(item, seller) }

// SplitMember splits a listing's member, "ITEM.SELLER".
func SplitMember(member string) (item, seller string, ok bool) { return plug.SplitMember(member) }
