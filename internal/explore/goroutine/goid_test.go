package goroutine

import (
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
)

// TestGoidReadsTheRuntimesRecord checks that goid, read from the
// goroutine's record, names every goroutine as its stack trace does, in
// and out of a synctest bubble, and that on amd64 and arm64 it does not
// fall back to stack traces.
func TestGoidReadsTheRuntimesRecord(t *testing.T) {
	switch runtime.GOARCH {
	case "amd64", "arm64":
		if goidOffset < 0 {
			t.Fatalf("goidOffset = %d on %s: the id is read from stack traces", goidOffset,
				runtime.GOARCH)
		}
	}
	check := func(t *testing.T) {
		var wg sync.WaitGroup
		ids := make([][2]uint64, 64)
		for i := range ids {
			wg.Go(func() {
				runtime.Gosched()
				ids[i] = [2]uint64{ID(), stackGoid()}
			})
		}
		wg.Wait()
		seen := map[uint64]bool{}
		for _, id := range ids {
			if id[0] != id[1] || id[0] == 0 {
				t.Errorf("goid() = %d, its stack trace says %d", id[0], id[1])
			}
			if seen[id[0]] {
				t.Errorf("two goroutines with id %d", id[0])
			}
			seen[id[0]] = true
		}
	}
	t.Run("plain", check)
	t.Run("bubble", func(t *testing.T) { synctest.Test(t, check) })
}

// TestWhoAmIReadsItsCreatorOnlyWhenAsked checks that a goroutine's
// creator, read from its stack trace, is the goroutine that started it.
func TestWhoAmIReadsItsCreatorOnlyWhenAsked(t *testing.T) {
	parent := ID()
	got := make(chan Self)
	go func() {
		s := WhoAmI()
		if s.Parent != 0 {
			t.Errorf("whoAmI read its creator (%d) unasked", s.Parent)
		}
		s.Parent = OwnCreator()
		got <- s
	}()
	s := <-got
	if s.Parent != parent {
		t.Errorf("creator %d, want %d", s.Parent, parent)
	}
}
