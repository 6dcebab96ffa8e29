package locking

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// Outcome is what a client knows of a write after its call returned: the
// one classification of errors that the packages built on this one (the
// market, its history checker, its HTTP service) share, so that they
// never disagree about an error.
type Outcome int

// The outcomes.
const (
	// Applied: the call succeeded.
	Applied Outcome = iota
	// NotApplied: the write certainly did not happen; trying it again
	// cannot apply it twice.
	NotApplied
	// Unknown: the write was, or may have been, sent and its reply was
	// lost; it may have happened. Only a retry that cannot apply twice (an
	// idempotent operation) settles it.
	Unknown
)

func (o Outcome) String() string {
	switch o {
	case Applied:
		return "applied"
	case NotApplied:
		return "not applied"
	case Unknown:
		return "unknown"
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// refusals are the first words of the error replies with which Redis
// refuses a command before running it (out of memory, busy with a
// script, loading, a read-only replica, a replica without its master, a
// slot in migration, a cluster down, writes stopped after a failed save,
// too few replicas, a transaction discarded whole, an unknown script).
var refusals = []string{"OOM", "BUSY", "LOADING", "READONLY", "MASTERDOWN", "TRYAGAIN",
	"CLUSTERDOWN", "MISCONF", "NOREPLICAS", "EXECABORT", "NOSCRIPT"}

// OutcomeOf classifies the error of a call that writes to Redis: Applied
// for nil; NotApplied for this package's refusals (ErrNotAcquired,
// ErrNotHeld, ErrLockLost: it returns them only when it wrote nothing that
// stays), for a command that was never sent (a closed client, no
// connection from the pool, a failed dial, a refused connection) and for
// an error reply that refuses the command before it runs (OOM, BUSY,
// LOADING, READONLY, ...) or a refused connection (too many clients,
// authentication); Unknown for anything else: a reply lost to a timeout, a
// reset or EOF, another error reply (a script or a transaction may have
// written before it), and a context that ended, which a client made with
// ContextTimeoutEnabled may return after the command was sent.
func OutcomeOf(err error) Outcome {
	switch {
	case err == nil:
		return Applied
	case errors.Is(err, ErrNotAcquired), errors.Is(err, ErrNotHeld), errors.Is(err, ErrLockLost),
		notSent(err), refused(err):
		return NotApplied
	}
	return Unknown
}

// notSent reports whether err says the command never left the client.
func notSent(err error) bool {
	var op *net.OpError
	return errors.Is(err, redis.ErrClosed) || errors.Is(err, redis.ErrPoolTimeout) ||
		errors.Is(err, redis.ErrPoolExhausted) || errors.Is(err, syscall.ECONNREFUSED) ||
		(errors.As(err, &op) && op.Op == "dial")
}

// refused reports whether err is an error reply with which Redis refused
// the command, or the connection, before running anything.
func refused(err error) bool {
	var reply redis.Error
	if !errors.As(err, &reply) {
		return false
	}
	word, _, _ := strings.Cut(reply.Error(), " ")
	for _, r := range refusals {
		if word == r {
			return true
		}
	}
	return redis.IsMaxClientsError(err) || redis.IsAuthError(err)
}
