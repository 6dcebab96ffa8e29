package netdelay

import (
	"testing"
	"time"
)

// TestCloseEndsSleep: close wakes a sleeper set for an hour, with an
// error, and a closed waiter sleeps no more.
func TestCloseEndsSleep(t *testing.T) {
	w, err := newWaiter()
	if err != nil {
		t.Fatal(err)
	}
	slept := make(chan error)
	go func() { slept <- w.sleep(time.Hour) }()
	w.close()
	if err := <-slept; err == nil {
		t.Fatal("sleep ended without error by close")
	}
	if err := w.sleep(time.Hour); err == nil {
		t.Fatal("sleep on a closed waiter returned no error")
	}
}

// TestSleepNothing: a zero or negative sleep returns at once, without
// arming the timer (a timerfd set to zero would never fire).
func TestSleepNothing(t *testing.T) {
	w, err := newWaiter()
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	for _, d := range []time.Duration{0, -time.Second} {
		if err := w.sleep(d); err != nil {
			t.Fatalf("sleep(%v): %v", d, err)
		}
	}
}
