// Package labsession keeps the lab's explorer sessions on the server: a
// bounded number at a time, each closed once it has been idle too long,
// each used by one request at a time.
package labsession

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
	ErrBusy = errors.New("labsession: too many sessions")
	// ErrNotFound is returned for an ID the store does not hold (never
	// made, removed, or expired).
	ErrNotFound = errors.New("labsession: no such session")
	// ErrClosed is returned once the store is closed.
	ErrClosed = errors.New("labsession: store closed")
)

// Closer is what a Store keeps: anything that must be closed when it goes.
type Closer interface{ Close() error }

// Store holds sessions by ID. Sessions idle for longer than its idle
// limit are closed the next time the store is used (no goroutine watches
// them). Its methods are safe for concurrent use.
type Store[S Closer] struct {
	max  int
	idle time.Duration
	now  func() time.Time

	mu     sync.Mutex
	closed bool
	// reserved counts slots taken by Add while their session is made.
	reserved int
	items    map[string]*entry[S]
}

type entry[S Closer] struct {
	// op serialises the operations on one session.
	op   sync.Mutex
	s    S
	used time.Time
	// inUse counts the calls of Do on it (under Store.mu): a session in
	// use does not expire.
	inUse int
	gone  bool
}

// NewStore returns a store of at most max sessions, each closed after idle
// without use. now is the clock (time.Now when nil).
func NewStore[S Closer](max int, idle time.Duration, now func() time.Time) *Store[S] {
	if now == nil {
		now = time.Now
	}
	return &Store[S]{max: max, idle: idle, now: now, items: map[string]*entry[S]{}}
}

// Add makes a session with make and keeps it under a new ID. It returns
// ErrBusy, without calling make, when the store is full (expired sessions
// are closed first), and make's error when make fails.
func (st *Store[S]) Add(make func() (S, error)) (string, S, error) {
	var zero S
	st.mu.Lock()
	if st.closed {
		st.mu.Unlock()
		return "", zero, ErrClosed
	}
	expired := st.sweepLocked()
	if len(st.items)+st.reserved >= st.max {
		st.mu.Unlock()
		closeAll(expired)
		return "", zero, fmt.Errorf("%w: %d at most", ErrBusy, st.max)
	}
	st.reserved++
	st.mu.Unlock()
	closeAll(expired)

	s, err := make()
	st.mu.Lock()
	defer st.mu.Unlock()
	st.reserved--
	if err != nil {
		return "", zero, err
	}
	if st.closed {
		s.Close()
		return "", zero, ErrClosed
	}
	id := newID()
	st.items[id] = &entry[S]{s: s, used: st.now()}
	return id, s, nil
}

// Do runs f on session id, alone: other calls for the same session wait.
// It returns ErrNotFound for an unknown or expired session.
func (st *Store[S]) Do(id string, f func(S) error) error {
	st.mu.Lock()
	if st.closed {
		st.mu.Unlock()
		return ErrClosed
	}
	expired := st.sweepLocked()
	e, ok := st.items[id]
	if ok {
		e.inUse++
	}
	st.mu.Unlock()
	closeAll(expired)
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

// Remove closes session id and forgets it.
func (st *Store[S]) Remove(id string) error {
	st.mu.Lock()
	e, ok := st.items[id]
	delete(st.items, id)
	st.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	return closeEntry(e)
}

// Len is how many sessions the store holds (expired ones included until
// the store is next used).
func (st *Store[S]) Len() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.items)
}

// Close closes every session and makes later calls fail with ErrClosed.
// Calling it again does nothing.
func (st *Store[S]) Close() error {
	st.mu.Lock()
	if st.closed {
		st.mu.Unlock()
		return nil
	}
	st.closed = true
	var all []*entry[S]
	for id, e := range st.items {
		all = append(all, e)
		delete(st.items, id)
	}
	st.mu.Unlock()
	return closeAll(all)
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

// closeEntry waits for the session's operation in progress, if any, then
// closes it.
func closeEntry[S Closer](e *entry[S]) error {
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
