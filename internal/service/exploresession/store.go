// Package exploresession keeps the lab's explorer sessions on the server: a
// bounded number at a time, in all and per client, each closed once it has
// been idle too long, each moved by one request at a time.
package exploresession

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Errors of a Store.
var (
	// ErrBusy is returned by Add when the store holds as many sessions as
	// it may.
	ErrBusy = errors.New("exploresession: too many sessions")
	// ErrClientBusy is returned by Add when the client holds as many
	// sessions as one client may.
	ErrClientBusy = errors.New("exploresession: too many sessions for one client")
	// ErrNotFound is returned for an ID the store does not hold (never
	// made, removed, or expired).
	ErrNotFound = errors.New("exploresession: no such session")
	// ErrClosed is returned once the store is closed.
	ErrClosed = errors.New("exploresession: store closed")
)

// Closer is what a Store keeps: anything that must be closed when it goes.
type Closer interface{ Close() error }

// Aborter is a session that can stop the operation in progress on it at
// once. The Store calls Abort, when a session has it, before it waits
// for that operation to close the session, and Remove closes such a
// session in the background: a removal never waits for a step.
type Aborter interface{ Abort() }

// Limits bound a Store.
type Limits struct {
	// Total is how many sessions the store holds at once.
	Total int
	// PerClient is how many of them one client (as Add names it) holds.
	PerClient int
}

// Store holds sessions by ID. A goroutine of its own closes the sessions
// idle for longer than its idle limit, on a timer, until Close. Its
// methods are safe for concurrent use.
type Store[S Closer] struct {
	lim  Limits
	idle time.Duration
	now  func() time.Time

	mu     sync.Mutex
	closed bool
	// reserved counts slots taken by Add while their session is made, by
	// client.
	reserved map[string]int
	items    map[string]*entry[S]

	stop   chan struct{}
	reaper sync.WaitGroup
	// closing counts the sessions Remove closes in the background.
	closing sync.WaitGroup
}

type entry[S Closer] struct {
	// op serialises the operations on one session.
	op     sync.Mutex
	s      S
	client string
	used   time.Time
	// inUse counts the calls of Do on it (under Store.mu): a session in
	// use does not expire.
	inUse int
	gone  bool
}

// NewStore returns a store bounded by lim, whose sessions are closed after
// idle without use; it checks for them every idle/4 (at least every
// second). now is the clock (time.Now when nil).
func NewStore[S Closer](lim Limits, idle time.Duration, now func() time.Time) *Store[S] {
	if now == nil {
		now = time.Now
	}
	st := &Store[S]{lim: lim, idle: idle, now: now, reserved: map[string]int{}, items: map[string]*entry[S]{},
		stop: make(chan struct{})}
	every := min(max(idle/4, 10*time.Millisecond), time.Second)
	st.reaper.Go(func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-st.stop:
				return
			case <-tick.C:
				st.Sweep()
			}
		}
	})
	return st
}

// Sweep closes the sessions idle for longer than the store's limit now;
// the store's goroutine calls it on a timer.
func (st *Store[S]) Sweep() {
	st.mu.Lock()
	expired := st.sweepLocked()
	st.mu.Unlock()
	closeAll(expired)
}

// Add makes a session for client with make and keeps it under a new ID.
// It returns ErrBusy or ErrClientBusy, without calling make, when the
// store or the client's share of it is full, and make's error when make
// fails.
func (st *Store[S]) Add(client string, make func() (S, error)) (string, S, error) {
	var zero S
	st.mu.Lock()
	if st.closed {
		st.mu.Unlock()
		return "", zero, ErrClosed
	}
	expired := st.sweepLocked()
	total, mine := len(st.items), st.reserved[client]
	for _, n := range st.reserved {
		total += n
	}
	for _, e := range st.items {
		if e.client == client {
			mine++
		}
	}
	var busy error
	switch {
	case total >= st.lim.Total:
		busy = fmt.Errorf("%w: %d at most", ErrBusy, st.lim.Total)
	case mine >= st.lim.PerClient:
		busy = fmt.Errorf("%w: %d at most", ErrClientBusy, st.lim.PerClient)
	}
	if busy != nil {
		st.mu.Unlock()
		closeAll(expired)
		return "", zero, busy
	}
	st.reserved[client]++
	st.mu.Unlock()
	closeAll(expired)

	s, err := make()
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.reserved[client]--; st.reserved[client] == 0 {
		delete(st.reserved, client)
	}
	if err != nil {
		return "", zero, err
	}
	if st.closed {
		s.Close()
		return "", zero, ErrClosed
	}
	id := newID()
	st.items[id] = &entry[S]{s: s, client: client, used: st.now()}
	return id, s, nil
}

// Do runs f on session id, alone: other calls of Do for the same session
// wait. It returns ErrNotFound for an unknown or expired session.
func (st *Store[S]) Do(id string, f func(S) error) error {
	st.mu.Lock()
	if st.closed {
		st.mu.Unlock()
		return ErrClosed
	}
	e, ok := st.items[id]
	if ok {
		e.inUse++
	}
	st.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	defer func() {
		st.mu.Lock()
		e.inUse--
		e.used = st.now()
		st.mu.Unlock()
	}()
	e.op.Lock()
	defer e.op.Unlock()
	if e.gone {
		return fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	return f(e.s)
}

// Get returns session id without waiting for the operation in progress
// on it, if any, and counts as a use of it: what the caller does with it
// must be safe beside Do's f.
func (st *Store[S]) Get(id string) (S, error) {
	var zero S
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return zero, ErrClosed
	}
	e, ok := st.items[id]
	if !ok {
		return zero, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	e.used = st.now()
	return e.s, nil
}

// Remove forgets session id and closes it. A session that can stop its
// operation in progress (Aborter) is aborted, and closed in the
// background: Remove does not wait for it (Close does). Another is
// closed once its operation in progress, if any, has ended.
func (st *Store[S]) Remove(id string) error {
	st.mu.Lock()
	e, ok := st.items[id]
	delete(st.items, id)
	if ok {
		st.closing.Add(1)
	}
	st.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	if a, ok := any(e.s).(Aborter); ok {
		a.Abort()
		go func() {
			defer st.closing.Done()
			closeEntry(e)
		}()
		return nil
	}
	defer st.closing.Done()
	return closeEntry(e)
}

// Len is how many sessions the store holds.
func (st *Store[S]) Len() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.items)
}

// Close closes every session, stops the store's goroutine and makes later
// calls fail with ErrClosed. Calling it again does nothing.
func (st *Store[S]) Close() error {
	st.mu.Lock()
	if st.closed {
		st.mu.Unlock()
		return nil
	}
	st.closed = true
	close(st.stop)
	var all []*entry[S]
	for id, e := range st.items {
		all = append(all, e)
		delete(st.items, id)
	}
	st.mu.Unlock()
	st.reaper.Wait()
	err := closeAll(all)
	st.closing.Wait()
	return err
}

// sweepLocked takes the expired sessions out of the store and returns
// them, to be closed without st.mu held.
func (st *Store[S]) sweepLocked() []*entry[S] {
	var out []*entry[S]
	now := st.now()
	for id, e := range st.items {
		if e.inUse == 0 && now.Sub(e.used) > st.idle {
			out = append(out, e)
			delete(st.items, id)
		}
	}
	return out
}

// closeEntry stops the session's operation in progress, if any and if
// the session can (Aborter), waits for it, then closes the session.
func closeEntry[S Closer](e *entry[S]) error {
	if a, ok := any(e.s).(Aborter); ok {
		a.Abort()
	}
	e.op.Lock()
	defer e.op.Unlock()
	if e.gone {
		return nil
	}
	e.gone = true
	return e.s.Close()
}

func closeAll[S Closer](es []*entry[S]) error {
	var errs []error
	for _, e := range es {
		errs = append(errs, closeEntry(e))
	}
	return errors.Join(errs...)
}

// newID is a random session ID: 16 hex digits.
func newID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}
