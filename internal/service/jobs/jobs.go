// Package jobs is what the HTTP service (internal/service/httpapi) shares with the
// background runs it starts on request, the rush (internal/service/rush) and the
// lab (internal/service/lab): their states, the requests they take and the errors
// that refuse a start. It imports neither side, so the service does not
// depend on the simulator and its tools, and both sides can be tested on
// their own.
package jobs

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	"github.com/lockmarket/lockmarket/market"
)

// States of a run and of each of its parts.
const (
	StateIdle      = "idle"
	StatePending   = "pending"
	StateRunning   = "running"
	StateDone      = "done"
	StateCancelled = "cancelled"
	StateFailed    = "failed"
)

// Errors that refuse a start.
var (
	// ErrBusy: a run of the kind is already running.
	ErrBusy = errors.New("already running")
	// ErrClosed: the runner has been closed (the service is shutting down).
	ErrClosed = errors.New("shutting down")
	// ErrInvalid: the request cannot run.
	ErrInvalid = errors.New("invalid request")
	// ErrNotFound: no such session (never made, closed, or expired).
	ErrNotFound = errors.New("not found")
)

// RushConfig is a validated rush: Buyers and Listers in a fresh market of
// each strategy of Strategies in turn, for Duration in all, every command
// delayed by a round trip of RTT (0: none).
type RushConfig struct {
	Buyers, Listers int
	Duration        time.Duration
	RTT             time.Duration
	Strategies      []market.Strategy
}

// LabRequest is the body of POST /api/lab/runs: a recipe of the gallery,
// or a fault and a strategy.
type LabRequest struct {
	Recipe   *string `json:"recipe"`
	Fault    *string `json:"fault"`
	Strategy *string `json:"strategy"`
}

// ExploreRequest is the body of POST /api/explore/sessions: a recipe of
// the gallery, flawed or fixed (Fixed, or Fencing: the fix of 6 and 11 is
// the fenced write), or one of the market's strategies, with or without a
// fenced write.
type ExploreRequest struct {
	Recipe   *string `json:"recipe"`
	Strategy *string `json:"strategy"`
	Fencing  bool    `json:"fencing"`
	Fixed    bool    `json:"fixed"`
	// Lua is a lock of one's own, as Lua scripts, instead of a recipe or
	// a strategy.
	Lua *LuaLock `json:"lua"`
}

// LuaLock is a lock written as Lua scripts in the explorer's convention
// (KEYS[1] the lock key, ARGV[1] the owner's token, ARGV[2] the lease in
// ms; acquire and extend answer 1 or 0, release 1 when it deleted the
// lock): acquire and release, extend optional; or a read-write lock's
// four scripts.
type LuaLock struct {
	Acquire      string `json:"acquire"`
	Release      string `json:"release"`
	Extend       string `json:"extend"`
	ReadAcquire  string `json:"read_acquire"`
	ReadRelease  string `json:"read_release"`
	WriteAcquire string `json:"write_acquire"`
	WriteRelease string `json:"write_release"`
}

// NewID returns a short random ID for a run.
func NewID() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}
