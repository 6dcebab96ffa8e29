package locking_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/locking"
)

// fast is a backoff short enough for contention tests to finish soon.
var fast = locking.WithBackoff(locking.Backoff{Min: 100 * time.Microsecond, Max: 2 * time.Millisecond})

// contend runs workers goroutines that each call round rounds times under
// one deadline, and waits for them. A round's error is reported with
// t.Error and ends its worker.
func contend(t *testing.T, workers, rounds int, round func(ctx context.Context, worker int) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range rounds {
				if err := round(ctx, w); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// section is a critical section that notices when two holders are inside
// at once.
type section struct {
	inside, entries atomic.Int64
	overlap         atomic.Bool
}

func (s *section) enter() {
	s.entries.Add(1)
	if s.inside.Add(1) > 1 {
		s.overlap.Store(true)
	}
}

func (s *section) leave() { s.inside.Add(-1) }

// attempts is a client hook that counts the SET commands (a Mutex's
// acquisition attempts) that have had their reply.
type attempts struct{ n atomic.Int64 }

func (*attempts) DialHook(next redis.DialHook) redis.DialHook { return next }

func (a *attempts) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if cmd.Name() == "set" {
			a.n.Add(1)
		}
		return err
	}
}

func (*attempts) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// await waits until at least n attempts have had their reply.
func (a *attempts) await(t *testing.T, n int64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for a.n.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d acquisition attempts seen; want %d", a.n.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// gate is a client hook that, once closed, holds back every command and
// pipeline until it is opened again or the command's context ends: a
// server that stopped answering, as its client sees it.
type gate struct {
	mu     sync.Mutex
	closed chan struct{} // nil while open; closed by open
}

func (*gate) DialHook(next redis.DialHook) redis.DialHook { return next }

func (g *gate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := g.pass(ctx); err != nil {
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}

func (g *gate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if err := g.pass(ctx); err != nil {
			for _, c := range cmds {
				c.SetErr(err)
			}
			return err
		}
		return next(ctx, cmds)
	}
}

// close makes every later command wait.
func (g *gate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed == nil {
		g.closed = make(chan struct{})
	}
}

// open lets every waiting and later command through.
func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed != nil {
		close(g.closed)
		g.closed = nil
	}
}

// pass waits while the gate is closed.
func (g *gate) pass(ctx context.Context) error {
	g.mu.Lock()
	c := g.closed
	g.mu.Unlock()
	if c == nil {
		return nil
	}
	select {
	case <-c:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// resend is a client hook that sends every command and pipeline twice and
// keeps the second reply, as a client that retries after losing the first
// reply does (go-redis retries a command after a read timeout).
type resend struct{}

func (resend) DialHook(next redis.DialHook) redis.DialHook { return next }

func (resend) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		_ = next(ctx, cmd)
		cmd.SetErr(nil)
		return next(ctx, cmd)
	}
}

func (resend) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		_ = next(ctx, cmds)
		for _, c := range cmds {
			c.SetErr(nil)
		}
		return next(ctx, cmds)
	}
}
