package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/locking"
	"github.com/lockmarket/lockmarket/market"
)

// TestErrorFor checks the one mapping from errors, wrapped or not, to
// statuses and codes.
func TestErrorFor(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("purchase sword: %w", err) }
	tests := []struct {
		name   string
		err    error
		status int
		code   string
	}{
		{"invalid", wrap(market.ErrInvalid), 400, CodeInvalidRequest},
		{"user not found", wrap(market.ErrUserNotFound), 404, CodeNotFound},
		{"listing not found", wrap(market.ErrListingNotFound), 404, CodeListingNotFound},
		{"price changed", wrap(market.ErrPriceChanged), 409, CodePriceChanged},
		{"item not owned", wrap(market.ErrItemNotOwned), 409, CodeItemNotOwned},
		{"insufficient funds", wrap(market.ErrInsufficientFunds), 409, CodeInsufficientFunds},
		{"already exists", wrap(market.ErrAlreadyExists), 409, CodeAlreadyExists},
		{"market full", wrap(market.ErrMarketFull), 409, CodeMarketFull},
		{"contended over a deadline", fmt.Errorf("%w: %w", market.ErrContended, context.DeadlineExceeded), 503, CodeContended},
		{"corrupt", wrap(market.ErrCorrupt), 409, CodeCorruptState},
		{"lock lost (fenced)", fmt.Errorf("lock changed hands: %w: %w", locking.ErrLockLost, locking.ErrNotHeld), 503, CodeLockLost},
		{"operation ID reused", wrap(market.ErrOpMismatch), 422, CodeIdempotencyMismatch},
		// Never sent: nothing applied.
		{"connection refused", wrap(&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}), 503, CodeRedisUnavailable},
		{"dial timeout", wrap(&net.OpError{Op: "dial", Net: "tcp", Err: context.DeadlineExceeded}), 503, CodeRedisUnavailable},
		{"bare ECONNREFUSED", wrap(syscall.ECONNREFUSED), 503, CodeRedisUnavailable},
		{"pool timeout", wrap(redis.ErrPoolTimeout), 503, CodeRedisUnavailable},
		{"pool exhausted", wrap(redis.ErrPoolExhausted), 503, CodeRedisUnavailable},
		{"client closed", wrap(redis.ErrClosed), 503, CodeRedisUnavailable},
		// Sent, or perhaps sent, and the reply lost: the outcome is
		// unknown (a reset or EOF may come after the command was read).
		{"read timeout", wrap(&net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}), 503, CodeOutcomeUnknown},
		{"read reset", wrap(&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}), 503, CodeOutcomeUnknown},
		{"write timeout", wrap(&net.OpError{Op: "write", Net: "tcp", Err: os.ErrDeadlineExceeded}), 503, CodeOutcomeUnknown},
		{"broken pipe", wrap(&net.OpError{Op: "write", Net: "tcp", Err: syscall.EPIPE}), 503, CodeOutcomeUnknown},
		{"connection reset", wrap(syscall.ECONNRESET), 503, CodeOutcomeUnknown},
		{"EOF", wrap(io.EOF), 503, CodeOutcomeUnknown},
		{"unexpected EOF", wrap(io.ErrUnexpectedEOF), 503, CodeOutcomeUnknown},
		{"use of closed connection", wrap(net.ErrClosed), 503, CodeOutcomeUnknown},
		{"deadline", wrap(context.DeadlineExceeded), 503, CodeTimeout},
		{"canceled", wrap(context.Canceled), 499, CodeCanceled},
		{"body too large", wrap(&http.MaxBytesError{Limit: 10}), 413, CodeRequestTooLarge},
		{"echo not found", echo.ErrNotFound, 404, CodeNotFound},
		{"echo method", echo.ErrMethodNotAllowed, 405, CodeMethodNotAllowed},
		{"echo too large", echo.ErrStatusRequestEntityTooLarge, 413, CodeRequestTooLarge},
		{"echo bad request", echo.NewHTTPError(http.StatusBadRequest, "bad path"), 400, CodeInvalidRequest},
		{"api error", wrap(invalid("field %q is required", "x")), 400, CodeInvalidRequest},
		{"anything else", errors.New("boom"), 500, CodeInternal},
	}
	for _, tt := range tests {
		t.Run(tt.name+"/read", func(t *testing.T) {
			// A read: the same answer, except that a Redis 503 says the
			// read changed nothing, and is never outcome_unknown.
			got, write := ReadErrorFor(tt.err), ErrorFor(tt.err)
			if write.Status != http.StatusServiceUnavailable || write.Code == CodeContended || write.Code == CodeLockLost {
				if *got != *write {
					t.Fatalf("ReadErrorFor(%v) = %+v, want ErrorFor's %+v", tt.err, got, write)
				}
				return
			}
			wantCode := write.Code
			if wantCode == CodeOutcomeUnknown {
				wantCode = CodeRedisUnavailable
			}
			if got.Status != http.StatusServiceUnavailable || got.Code != wantCode || got.RetryAfter <= 0 {
				t.Fatalf("ReadErrorFor(%v) = %d %s (Retry-After %v), want 503 %s with Retry-After",
					tt.err, got.Status, got.Code, got.RetryAfter, wantCode)
			}
			if !strings.Contains(got.Message, msgRead) || strings.Contains(got.Message, HeaderIdempotencyKey) ||
				strings.Contains(got.Message, "applied") {
				t.Errorf("read message %q: want %q, no word of Idempotency-Key or of being applied", got.Message, msgRead)
			}
		})
		t.Run(tt.name, func(t *testing.T) {
			got := ErrorFor(tt.err)
			if got.Status != tt.status || got.Code != tt.code {
				t.Fatalf("ErrorFor(%v) = %d %s, want %d %s", tt.err, got.Status, got.Code, tt.status, tt.code)
			}
			if got.Message == "" {
				t.Error("no message")
			}
			if got.Status == http.StatusServiceUnavailable && got.Code != CodeContended && got.RetryAfter <= 0 {
				t.Error("a 503 without Retry-After")
			}
			// A 503 claims nothing was applied exactly when the market's
			// one classification says so.
			open := got.Code == CodeOutcomeUnknown || got.Code == CodeRedisError || got.Code == CodeTimeout
			if got.Status == http.StatusServiceUnavailable && open != (market.OutcomeOf(tt.err) == locking.Unknown) {
				t.Errorf("code %s, but market.OutcomeOf says %v", got.Code, market.OutcomeOf(tt.err))
			}
			if got.Code == CodeOutcomeUnknown && !strings.Contains(got.Message, HeaderIdempotencyKey) {
				t.Errorf("message %q does not say to retry with the same %s", got.Message, HeaderIdempotencyKey)
			}
		})
	}
}

// TestGateTimeout checks that an operation that waits too long for
// another strategy's operations to drain gives up with 503 contended and a
// Retry-After header, and changes nothing.
func TestGateTimeout(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		srv, err := New(Config{Market: f.m, GateTimeout: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		release, err := srv.gate.Enter(context.Background(), string(market.Lua))
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		before := redistest.Snapshot(t, f.rdb)
		r := serve(srv.Handler(), "POST", "/api/purchases?strategy=watch", `{"buyer":"carol","seller":"alice","item":"sword","price":50}`)
		if r.status != http.StatusServiceUnavailable || r.code() != CodeContended || r.header.Get("Retry-After") == "" {
			t.Fatalf("%d %s (Retry-After %q); want 503 %s with Retry-After", r.status, r.body, r.header.Get("Retry-After"), CodeContended)
		}
		if after := redistest.Snapshot(t, f.rdb); !maps.Equal(before, after) {
			t.Fatal("market changed")
		}
		// The same strategy as the one in flight is let in.
		if r := serve(srv.Handler(), "POST", "/api/purchases?strategy=lua", `{"buyer":"carol","seller":"alice","item":"sword","price":50}`); r.status != http.StatusOK {
			t.Fatalf("lua purchase: %d %s", r.status, r.body)
		}
	})
}

// TestPlainWords checks that the explorer's messages reach the page
// without the names of the code: the messages as the explorer and Redis
// give them, and what the page shows of them.
func TestPlainWords(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"invalid request: explore: the target failed: client A: explore: script answered outside the convention: " +
			"acquire.lua failed: ERR user_script:1: Script attempted to access nonexistent global variable 'foo' " +
			"script: be8e79a153b67c7996be1e272cc18cdc0e67b346, on @user_script:1.",
			"client A's acquire script failed: line 1: Script attempted to access nonexistent global variable 'foo'"},
		{"invalid request: explore: the target failed: client B: explore: script answered outside the convention: " +
			"release.lua failed: ERR Wrong number of args calling Redis command from script " +
			"script: 0123abcd, on @user_script:3.",
			"client B's release script failed: line 3: Wrong number of args calling Redis command from script"},
		{"invalid request: explore: the target failed: client A: explore: script answered outside the convention: " +
			"acquire.lua returned 7 (int64); want 1 or 0",
			"client A's acquire script answered 7; want 1 or 0"},
		{"invalid request: lua.acquire does not parse: acquire line:1(column:7) near 'n': parse error",
			"your acquire script does not parse: line 1, column 7: near 'n': parse error"},
		{`not found: no explorer session "nope" (sessions end after 5m0s unused)`,
			`no explorer session "nope" (sessions end after 5 min unused)`},
		{"locking.Mutex, the write fenced (it commits only while the lock key holds the writer's token: Lock.Held under WATCH)",
			"lockmarket's lock, the write fenced (it commits only while the lock key holds the writer's token, checked under WATCH)"},
		{"locking.RWMutex (one hold per reader)", "lockmarket's read-write lock (one hold per reader)"},
		{"the step ran past its budget of 2s", "the step ran past its budget of 2s"},
		{"market: listing not found: map from carol", "listing not found: map from carol"},
	} {
		got := plainWords(tt.in)
		if got != tt.want {
			t.Errorf("plainWords(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
		for _, internal := range []string{"explore:", "user_script", "locking.", "invalid request", "(int64)"} {
			if strings.Contains(got, internal) {
				t.Errorf("plainWords(%q) = %q still says %q", tt.in, got, internal)
			}
		}
	}
}
