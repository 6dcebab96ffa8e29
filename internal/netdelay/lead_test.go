package netdelay

import (
	"testing"
	"time"
)

func TestLeadStaysInBounds(t *testing.T) {
	tests := []struct {
		name        string
		start, move time.Duration
		want        time.Duration
	}{
		{"later", 10 * time.Microsecond, leadStep, 10*time.Microsecond + leadStep},
		{"earlier", 10 * time.Microsecond, -leadStep, 10*time.Microsecond - leadStep},
		{"not below zero", 0, -leadStep, 0},
		{"not above the bound", maxLead, leadStep, maxLead},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ld lead
			ld.set(tt.start)
			ld.move(tt.move)
			if got := ld.get(); got != tt.want {
				t.Fatalf("lead = %v, want %v", got, tt.want)
			}
		})
	}
	var ld lead
	ld.set(-time.Second)
	if ld.get() != 0 {
		t.Fatalf("set(-1s) = %v", ld.get())
	}
	ld.set(time.Hour)
	if ld.get() != maxLead {
		t.Fatalf("set(1h) = %v", ld.get())
	}
}

// TestLateChunkLeavesLead: a chunk already past due is delivered at once
// and says nothing about the timer.
func TestLateChunkLeavesLead(t *testing.T) {
	w, err := newWaiter()
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	var ld lead
	ld.set(50 * time.Microsecond)
	if err := ld.wait(w, time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := ld.get(); got != 50*time.Microsecond {
		t.Fatalf("lead = %v after a late chunk, want it unchanged", got)
	}
}

// TestCloseEndsSleep: close wakes a sleeper armed for an hour, with an
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
	var ld lead
	if err := ld.wait(w, time.Now().Add(time.Hour)); err == nil {
		t.Fatal("wait on a closed waiter returned no error")
	}
}
