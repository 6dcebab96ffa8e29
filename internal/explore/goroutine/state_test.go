package goroutine

import (
	"strings"
	"testing"
)

// TestGoroutineKind: what the wall-clock detector takes each goroutine
// of a stack dump to be doing. A wait on a semaphore the runtime takes
// for itself (a collection starting, the world stopping) is the machine
// at work, which a starved machine makes long: it is never a wait on the
// wall clock. A wait on the program's own locks is a block, and a sleep a
// sleep.
func TestGoroutineKind(t *testing.T) {
	for _, tc := range []struct {
		name, dump, want string
	}{
		{"an allocation waiting for a collection to start", `goroutine 7 [semacquire]:
runtime.gopark(0x0?, 0x0?, 0x0?, 0x0?, 0x0?)
	/go/src/runtime/proc.go:460 +0xce
runtime.goparkunlock(...)
	/go/src/runtime/proc.go:466
runtime.semacquire1(0xc000010000, 0x0, 0x0, 0x0, 0x0)
	/go/src/runtime/sema.go:188 +0x21d
runtime.semacquire(...)
	/go/src/runtime/sema.go:139
runtime.gcStart({0x0?, 0x0?, 0x0?})
	/go/src/runtime/mgc.go:675 +0x9a
runtime.mallocgc(0x10, 0x0, 0x0)
	/go/src/runtime/malloc.go:1100 +0x3c5
fmt.Sprint({0xc000123f10, 0x1, 0x1})
	/go/src/fmt/print.go:263 +0x2e
created by example.com/app.run in goroutine 1
	/app/app.go:10 +0x2e`, "active"},
		{"an allocation waiting for the world to stop", `goroutine 8 [semacquire]:
runtime.gopark(0x0?, 0x0?, 0x0?, 0x0?, 0x0?)
	/go/src/runtime/proc.go:460 +0xce
runtime.semacquire1(0xc000010000, 0x0, 0x0, 0x0, 0x0)
	/go/src/runtime/sema.go:188 +0x21d
runtime.stopTheWorld(0x1)
	/go/src/runtime/proc.go:1500 +0x40
runtime.ReadMemStats(0xc000010000)
	/go/src/runtime/mstats.go:370 +0x1d`, "active"},
		{"a lock of the program's", `goroutine 9 [sync.Mutex.Lock]:
internal/sync.runtime_SemacquireMutex(0xc000010000?, 0x0?, 0x0?)
	/go/src/runtime/sema.go:95 +0x25
internal/sync.(*Mutex).lockSlow(0xc000010000)
	/go/src/internal/sync/mutex.go:149 +0x15d
sync.(*Mutex).Lock(...)
	/go/src/sync/mutex.go:46
example.com/app.f()
	/app/app.go:20 +0x2e`, "blocked"},
		{"a semaphore of the program's", `goroutine 10 [semacquire]:
runtime.gopark(0x0?, 0x0?, 0x0?, 0x0?, 0x0?)
	/go/src/runtime/proc.go:460 +0xce
runtime.semacquire1(0xc000010000, 0x0, 0x0, 0x0, 0x0)
	/go/src/runtime/sema.go:188 +0x21d
sync.runtime_Semacquire(0xc000010000?)
	/go/src/runtime/sema.go:71 +0x25
example.com/app.g()
	/app/app.go:30 +0x2e`, "blocked"},
		{"a sleep", `goroutine 11 [sleep]:
time.Sleep(0x3b9aca00)
	/go/src/runtime/time.go:363 +0x165
example.com/app.h()
	/app/app.go:40 +0x2e`, "sleep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gs := Parse([]byte(tc.dump))
			if len(gs) != 1 {
				t.Fatalf("%d goroutines read, want 1", len(gs))
			}
			for _, g := range gs {
				if got := g.Kind(); got != tc.want {
					t.Errorf("kind %q (state %q, frames %s), want %q", got, g.Status,
						strings.Join(g.Funcs, " < "), tc.want)
				}
			}
		})
	}
}
