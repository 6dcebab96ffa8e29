// Package locking holds Redis lock recipes that are correct on their own
// terms, each documented with the guarantee it gives and the one it does
// not. The broken recipes they replace live in package internal/flawed; the
// FIFO hand-over lock lives in package locking/queue.
//
// Every lock is a lease: it ends by itself after its TTL, which keeps a
// crashed holder from locking everyone out, and also lets a paused holder
// (a GC pause, a stalled network) outlive its hold while it still acts as
// the holder. Renewal makes that rarer; only a check at the resource,
// against the lock key or a fencing token, rules it out.
//
// # Names
//
// Each kind is a XMutex made by NewXMutex with options of type
// XMutexOption, and each acquisition returns a hold of type *XLock:
//
//	Mutex          -> *Lock
//	RWMutex        -> *RWLock          (AcquireRead, AcquireWrite)
//	ReentrantMutex -> *ReentrantLock
//	RedlockMutex   -> *RedlockLock
//	queue.Mutex    -> *queue.Lock
//
// Every kind has TryAcquire (one attempt; ErrNotAcquired when the lock is
// taken) and Acquire (wait until granted or ctx ends). Every hold has one
// shape: Release and Extend (ErrNotHeld once the hold is gone); Key, the
// key that stores its token (for an RWLock, the writer key or the readers
// set); Token (for a ReentrantLock, the owner); Waits, the attempts that
// failed before it was granted; and Expires, the lease length counted from
// just before the acquiring (or last extending) command was sent, on the
// context's clock (less the drift allowance for a RedlockLock; the zero
// time once a RedlockLock is released): the server's expiry is never
// earlier, unless clocks drift. So any hold can be kept alive by
// KeepAlive.
//
// # Configuration
//
// A lease or an option that cannot work is refused where it is given, as
// time.NewTicker refuses a non-positive interval: the constructors panic
// for a TTL below the 1 ms Redis can express, WithNodeTimeout and
// NewRedlockMutex for a node timeout not in (0, ttl), KeepAlive and
// AcquireKeepAlive (before it acquires) for a drift allowance not in
// [0, ttl). Check a TTL that comes from input first (package market's New
// refuses one with ErrInvalid). Extend, given a TTL per call, returns an
// error instead.

// # Lost replies
//
// An acquisition whose reply is lost (a timeout, a broken connection) may
// have taken the lock all the same, now or when a stalled server resumes.
// A Mutex (TryAcquire, Acquire, AcquirePiped) returns the error and
// releases that attempt's token in the background once Redis answers
// again, for at most one lease (Mutex.Settle waits for or stops it), so
// the lock is not left held until its lease ends; and an attempt the
// client sent twice finds its own token and is granted. A Lock.Release
// that Redis does not answer, or refuses for a while (LOADING while a
// restarted server reads its data, MASTERDOWN, TRYAGAIN), is sent again
// in the background the same way, and runs as soon as Redis takes
// commands again.
//
// # Which lock, when
//
//   - Mutex: one holder at a time while the lease lasts; only the holder
//     releases or extends it. It does not stop a holder paused past its
//     TTL from writing. Use it for data in the same Redis, with the commit
//     checking the lock in its WATCH transaction (Lock.Held), or avoid the
//     lock: one Lua script, or WATCH/MULTI/EXEC, is atomic by itself. Work
//     that is a WATCH transaction on the lock's Redis can send the
//     acquisition with its WATCH and reads (AcquirePiped) and the release
//     inside its MULTI/EXEC (QueueRelease), so that an uncontended hold
//     costs no round trip of its own (package market's Coarse and Fine).
//   - Mutex WithFencing: every hold gets a number strictly greater than all
//     earlier ones for the key (Lock.Fence); a resource that refuses lower
//     numbers atomically with the write (FencedWrite, for a resource in
//     Redis) never applies an older holder's write after a newer one's. Use
//     it to protect something outside the lock's Redis. It does not refuse
//     a stale write when no newer holder has written yet.
//   - Mutex.AcquireKeepAlive, or KeepAlive over any hold: a watchdog renews
//     the lease every TTL/3 and cancels the work context (cause
//     ErrLockLost) as soon as a renewal is refused, or when Redis stays
//     silent until a drift allowance (WithDrift, default TTL/100 + 2 ms)
//     before the lease would end, so the work stops while the lease still
//     runs on the server. Use it for work that may outlast any TTL you
//     would pick. Work already past its last context check can still write
//     late: fence it too.
//   - Mutex WithWakeups: a release wakes a waiter at once instead of every
//     waiter polling. Use it for a crowd contending for one lock. Any
//     waiter may win: it is not fair.
//   - ReentrantMutex: the owner, carried in the context (WithOwner), may
//     take it again while holding it; the lock is free once every hold is
//     released. Use it for code that calls itself. The whole hold shares
//     one lease, reset by each acquisition.
//   - RWMutex: many readers or one writer; each reader releases only its
//     own hold, and a waiting writer keeps new readers out. Use it for data
//     read often and written rarely. Not reentrant; writers are not served
//     in order.
//   - RedlockMutex: a lease on a majority of N independent servers, which
//     survives the loss of up to N/2 of them. It costs N round trips per
//     step and assumes bounded clock drift and pauses, and a server that
//     restarts without its data within the TTL breaks it: fence as well.
//   - queue.Mutex: waiters are served in arrival order and a release hands
//     the lock to the next one inside Redis. Use it when the tail wait or
//     fairness matters. Each waiter keeps a connection blocked.
package locking
