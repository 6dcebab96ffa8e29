package sim

import (
	"context"
	"errors"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market"
)

// resumeOnTimeout is a go-redis hook that resumes a stopped server once a
// command has timed out: the first audit's reply times out for sure, the
// next is answered.
type resumeOnTimeout struct {
	once   sync.Once
	resume func()
	timed  *int
}

func (h *resumeOnTimeout) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *resumeOnTimeout) after(err error) {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		*h.timed++
		h.once.Do(h.resume)
	}
}

func (h *resumeOnTimeout) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.after(err)
		return err
	}
}

func (h *resumeOnTimeout) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.after(err)
		return err
	}
}

// TestAuditAsksAgainAfterATimeout: an audit whose reply times out (the
// server is stopped) is asked for again, and the second answer counts.
func TestAuditAsksAgainAfterATimeout(t *testing.T) {
	b := redistest.Real(t)
	ctx := context.Background()
	timed := 0
	c := redis.NewClient(&redis.Options{Addr: b.Addr(), ReadTimeout: 100 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	m, err := market.New(c, "audit-again")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.CreateUser(ctx, "u1", "User", 10); err != nil {
		t.Fatal(err)
	}
	if err := b.Server.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resume := func() { b.Server.Signal(syscall.SIGCONT) }
	defer resume()
	c.AddHook(&resumeOnTimeout{resume: resume, timed: &timed})
	rep, err := auditMarket(ctx, m)
	if err != nil || rep.Total() != 0 || rep.Users != 1 {
		t.Fatalf("audit: %+v, %v; want a clean audit of 1 user", rep, err)
	}
	if timed == 0 {
		t.Fatal("no reply timed out: the test did not test the retry")
	}
}
