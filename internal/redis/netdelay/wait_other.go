//go:build !linux || netdelay_gotimer

package netdelay

import (
	"errors"
	"sync"
	"time"
)

// errWaiterClosed ends a sleep on a closed waiter.
var errWaiterClosed = errors.New("netdelay: waiter closed")

// waiter sleeps with a Go timer: outside Linux, where there is no timerfd,
// and on Linux with the build tag netdelay_gotimer, to compare the two.
type waiter struct {
	t    *time.Timer
	done chan struct{}
	once sync.Once
}

func newWaiter() (*waiter, error) {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &waiter{t: t, done: make(chan struct{})}, nil
}

// sleep returns after d, or with an error once close was called. Only one
// goroutine may sleep on a waiter at a time.
func (w *waiter) sleep(d time.Duration) error {
	if d <= 0 {
		return nil
	}
	w.t.Reset(d)
	select {
	case <-w.t.C:
		return nil
	case <-w.done:
		w.t.Stop()
		return errWaiterClosed
	}
}

// close ends a sleep in progress and every later one; it may be called
// from any goroutine.
func (w *waiter) close() { w.once.Do(func() { close(w.done) }) }
