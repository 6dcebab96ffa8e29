// Package api is the JSON contract of the HTTP service's work in the
// background (cmd/market's /api/rush, /api/lab and /api/explore routes):
// the bodies those routes take, the answers they give, the states the
// answers report and the errors that refuse a request. The handlers
// (internal/service/httpapi) decode and answer these types; the rush
// (internal/service/rush), the lab (internal/service/lab) and the explorer
// sessions (internal/service/exploresession) take and return them. The
// handlers are tested against the real runners, so the contract lives
// here, where both read it, rather than in either of them.
package api

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
)

// States of a run, of each of its parts and of a search.
const (
	StateIdle      = "idle"
	StatePending   = "pending"
	StateRunning   = "running"
	StateDone      = "done"
	StateCancelled = "cancelled"
	StateFailed    = "failed"
)

// Errors that refuse a request. The handlers answer them with a status
// each: 409, 503, 400 and 404.
var (
	// ErrBusy: a run of the kind is already running, or the runner holds
	// as much as it may.
	ErrBusy = errors.New("already running")
	// ErrClosed: the runner has been closed (the service is shutting down).
	ErrClosed = errors.New("shutting down")
	// ErrInvalid: the request cannot run.
	ErrInvalid = errors.New("invalid request")
	// ErrNotFound: no such session (never made, closed, or expired).
	ErrNotFound = errors.New("not found")
)

// Invalidf is an error wrapping ErrInvalid, its message formatted as
// fmt.Sprintf does.
func Invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// NewID returns a short random ID for a run: 8 hex digits.
func NewID() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}
