package httpapi

import (
	"context"
	"sync"
)

// Gate keeps operations of different strategies apart in one process.
//
// Strategies are not safe to mix on one market: a lock strategy does not
// WATCH the market, so a purchase made under watch or lua can commit
// between a lock holder's read and its EXEC. The gate admits any number of
// operations with the same key (strategy) at once; an operation with
// another key waits until those in flight have drained. Waiting operations
// are served in turns, first come first served, and an arrival whose key
// is running waits too once another key is queued, so no strategy starves.
//
// The gate orders the operations of one process only: it makes strategy
// mixing safe when one service process serves a market, not when several
// processes share it. The zero value is an open gate, ready to use.
type Gate struct {
	mu     sync.Mutex
	cur    string  // key of the operations in flight
	active int     // number of operations in flight
	queue  []*turn // waiting groups, oldest first; non-empty only if active > 0
}

// turn is a group of waiting operations with one key, admitted together.
type turn struct {
	key   string
	n     int
	ready chan struct{} // closed when the group is admitted
}

// Enter waits until an operation with key may run, or ctx ends. On
// success the caller must call release exactly once when it is done.
func (g *Gate) Enter(ctx context.Context, key string) (release func(), err error) {
	g.mu.Lock()
	if g.active == 0 || (g.cur == key && len(g.queue) == 0) {
		g.cur = key
		g.active++
		g.mu.Unlock()
		return g.releaser(), nil
	}
	var t *turn
	if n := len(g.queue); n > 0 && g.queue[n-1].key == key {
		t = g.queue[n-1]
	} else {
		t = &turn{key: key, ready: make(chan struct{})}
		g.queue = append(g.queue, t)
	}
	t.n++
	g.mu.Unlock()

	select {
	case <-t.ready:
		return g.releaser(), nil
	case <-ctx.Done():
	}
	g.mu.Lock()
	select {
	case <-t.ready:
		// Admitted while giving up: hand the place back.
		g.mu.Unlock()
		g.leave()
		return nil, ctx.Err()
	default:
	}
	t.n--
	if t.n == 0 {
		for i, q := range g.queue {
			if q == t {
				g.queue = append(g.queue[:i], g.queue[i+1:]...)
				break
			}
		}
	}
	g.mu.Unlock()
	return nil, ctx.Err()
}

func (g *Gate) releaser() func() {
	var once sync.Once
	return func() { once.Do(g.leave) }
}

func (g *Gate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.active--
	if g.active == 0 && len(g.queue) > 0 {
		t := g.queue[0]
		g.queue = g.queue[1:]
		g.cur, g.active = t.key, t.n
		close(t.ready)
	}
}

// state reports the key in flight, how many run, and how many wait.
func (g *Gate) state() (cur string, active, waiting int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, t := range g.queue {
		waiting += t.n
	}
	return g.cur, g.active, waiting
}
