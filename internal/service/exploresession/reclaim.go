package exploresession

import (
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// reclaimer gives the memory the service no longer uses back to the
// system after a sandbox's session ends. Such a session may have read
// megabytes from its sandbox (a value is cut before it is sent on, not
// before it is read), and the Go runtime would otherwise keep that
// memory for minutes: the service returns to its size at rest instead
// (TestSandboxAnswersBounded, cmd/market). One return serves every
// session that ended before it began, so a class ending at once costs a
// few garbage collections, not one each.
type reclaimer struct {
	mu    sync.Mutex // held while the memory is given back
	asked atomic.Uint64
	done  uint64 // the asks the last return served; mu held
}

// free gives the memory back, unless a return that began after this call
// did.
func (r *reclaimer) free() {
	n := r.asked.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done >= n {
		return
	}
	r.done = r.asked.Load()
	debug.FreeOSMemory()
}
