package exploresession_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/service/exploresession"
)

// session counts its closes.
type session struct {
	mu     sync.Mutex
	closes int
}

func (s *session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closes++
	return nil
}

func (s *session) closed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closes
}

// clock is a settable time.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestStore(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	st := exploresession.NewStore[*session](exploresession.Limits{Total: 2, PerClient: 2}, time.Minute, clk.now)
	mk := func() (*session, error) { return &session{}, nil }

	a, sa, err := st.Add("c", mk)
	if err != nil {
		t.Fatal(err)
	}
	b, sb, err := st.Add("c", mk)
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Fatalf("two sessions share the ID %q", a)
	}
	called := false
	if _, _, err := st.Add("c", func() (*session, error) { called = true; return &session{}, nil }); !errors.Is(err, exploresession.ErrBusy) || called {
		t.Fatalf("a third session: %v (made: %v), want ErrBusy before making it", err, called)
	}
	if err := st.Do("nope", func(*session) error { return nil }); !errors.Is(err, exploresession.ErrNotFound) {
		t.Fatalf("unknown ID: %v, want ErrNotFound", err)
	}
	var got *session
	if err := st.Do(a, func(s *session) error { got = s; return nil }); err != nil || got != sa {
		t.Fatalf("Do(a) = %v on %p, want nil on %p", err, got, sa)
	}
	want := errors.New("the step failed")
	if err := st.Do(a, func(*session) error { return want }); !errors.Is(err, want) {
		t.Fatalf("Do passes f's error on: got %v", err)
	}

	// b idles past the limit while a is used: b goes, a stays.
	clk.add(40 * time.Second)
	if err := st.Do(a, func(*session) error { return nil }); err != nil {
		t.Fatal(err)
	}
	clk.add(30 * time.Second)
	st.Sweep()
	if err := st.Do(b, func(*session) error { return nil }); !errors.Is(err, exploresession.ErrNotFound) {
		t.Fatalf("an expired session: %v, want ErrNotFound", err)
	}
	if sb.closed() != 1 || sa.closed() != 0 {
		t.Fatalf("closes: expired %d, live %d; want 1 and 0", sb.closed(), sa.closed())
	}
	// Its slot is free again.
	c, sc, err := st.Add("c", mk)
	if err != nil {
		t.Fatalf("after an expiry: %v", err)
	}

	// A session in use does not expire however long its step takes.
	inside := make(chan struct{})
	release := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		st.Do(c, func(*session) error { close(inside); <-release; return nil })
	})
	<-inside
	clk.add(10 * time.Minute)
	st.Sweep()
	if err := st.Do(a, func(*session) error { return nil }); !errors.Is(err, exploresession.ErrNotFound) {
		t.Fatalf("a, idle 10 minutes: %v, want ErrNotFound", err)
	}
	close(release)
	wg.Wait()
	if sc.closed() != 0 {
		t.Fatal("a session was closed during its step")
	}
	if err := st.Remove(c); err != nil || sc.closed() != 1 {
		t.Fatalf("Remove: %v, closes %d", err, sc.closed())
	}
	if err := st.Remove(c); !errors.Is(err, exploresession.ErrNotFound) {
		t.Fatalf("Remove twice: %v", err)
	}

	// Close closes what is left and refuses the rest.
	_, sd, err := st.Add("c", mk)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if sd.closed() != 1 || st.Len() != 0 {
		t.Fatalf("after Close: closes %d, %d sessions left", sd.closed(), st.Len())
	}
	if _, _, err := st.Add("c", mk); !errors.Is(err, exploresession.ErrClosed) {
		t.Fatalf("Add after Close: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatalf("Close twice: %v", err)
	}
}

func TestStoreMakeFails(t *testing.T) {
	st := exploresession.NewStore[*session](exploresession.Limits{Total: 1, PerClient: 1}, time.Minute, nil)
	boom := errors.New("no miniredis")
	if _, _, err := st.Add("c", func() (*session, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("Add = %v, want make's error", err)
	}
	// The failed make gave its slot back.
	if _, _, err := st.Add("c", func() (*session, error) { return &session{}, nil }); err != nil {
		t.Fatalf("after a failed make: %v", err)
	}
	st.Close()
}

// TestStoreLimits: one client may hold PerClient sessions, all of them
// Total; a session ended makes room.
func TestStoreLimits(t *testing.T) {
	st := exploresession.NewStore[*session](exploresession.Limits{Total: 3, PerClient: 2}, time.Minute, nil)
	defer st.Close()
	mk := func() (*session, error) { return &session{}, nil }
	a1, _, err := st.Add("a", mk)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Add("a", mk); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Add("a", mk); !errors.Is(err, exploresession.ErrClientBusy) {
		t.Fatalf("a's third session: %v, want ErrClientBusy", err)
	}
	if _, _, err := st.Add("b", mk); err != nil {
		t.Fatalf("b's first session: %v", err)
	}
	if _, _, err := st.Add("c", mk); !errors.Is(err, exploresession.ErrBusy) {
		t.Fatalf("a fourth session in all: %v, want ErrBusy", err)
	}
	if err := st.Remove(a1); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Add("c", mk); err != nil {
		t.Fatalf("after a session ended: %v", err)
	}
}

// TestStoreReaps: an idle session is closed by the store's own timer,
// with no call to the store.
func TestStoreReaps(t *testing.T) {
	st := exploresession.NewStore[*session](exploresession.Limits{Total: 1, PerClient: 1}, 20*time.Millisecond, nil)
	defer st.Close()
	_, s, err := st.Add("a", func() (*session, error) { return &session{}, nil })
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for s.closed() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if s.closed() != 1 || st.Len() != 0 {
		t.Fatalf("after a minute idle at most: closed %d times, %d sessions held", s.closed(), st.Len())
	}
}
