package market

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/locking"
	"github.com/lockmarket/lockmarket/market/internal/plug"
	"github.com/lockmarket/lockmarket/watchtx"
)

// WithFencing makes the Coarse and Fine strategies commit only while their
// lock is still theirs: the commit's transaction also WATCHes the lock key
// and first checks that it still holds the lease's token, so a holder that
// was paused past its lease (and perhaps replaced by another) has its
// write refused with locking.ErrLockLost instead of applying it beside the
// new holder's. A markettrace.LockFunc whose lease has no token cannot be fenced: the
// operation then fails with ErrInvalid, having released the lock and
// applied nothing.
func WithFencing() Option { return func(m *Market) { m.fencing = true } }

// hold is the lock an operation runs under, however it was taken.
type hold struct {
	token string
	waits int
	// readsSent is true when the reads queued with the acquisition
	// travelled with the winning attempt, so they ran under the lock.
	readsSent bool
	// queueRelease queues the release inside the commit's transaction;
	// nil when the lock can only be released by release, afterwards.
	queueRelease func(ctx context.Context, p redis.Pipeliner) func() error
	release      func(ctx context.Context) error
}

// lockKey is the lock of a Coarse (the market's) or Fine (the listing's)
// operation.
func (m *Market) lockKey(s Strategy, item, seller string) string {
	if s == Fine {
		return m.keys.ItemLock(item, seller)
	}
	return m.keys.MarketLock()
}

// takeLock takes the lock on key: by default a locking.Mutex, whose first
// attempt travels with the commands first queues (the WATCH and the
// reads); with markettrace.WithLockFunc, the lock function it gives.
func (m *Market) takeLock(ctx context.Context, tx *redis.Tx, key string, first func(p redis.Pipeliner)) (hold, error) {
	if m.plug.Lock != nil {
		l, err := m.plug.Lock(ctx, key, m.lockTTL)
		if err != nil {
			return hold{}, err
		}
		return hold{token: l.Token, waits: l.Waits, release: l.Release}, nil
	}
	mu := locking.NewMutex(m.rdb, key, m.lockTTL, locking.WithBackoff(m.backoff))
	if m.plug.Form == plug.Book {
		// The book form sends the acquisition on its own and the release
		// after the commit.
		l, err := mu.Acquire(ctx)
		if err != nil {
			return hold{}, err
		}
		return hold{token: l.Token(), waits: l.Waits(), release: l.Release}, nil
	}
	l, err := mu.AcquirePiped(ctx, tx, first)
	if err != nil {
		return hold{}, err
	}
	return hold{token: l.Token(), waits: l.Waits(), readsSent: l.Waits() == 0,
		queueRelease: l.QueueRelease, release: l.Release}, nil
}

// runLocked is the Coarse and Fine strategies (book 6.2.3, 6.2.4), in
// explicit steps: acquire the lock on key, WATCH watch (and, under
// fencing, the lock key) and read under the lock; check; commit (MULTI,
// the writes, the lock's release, EXEC), reading again and checking again
// while EXEC is aborted; release. With the default mutex the acquisition,
// the WATCH and the reads travel in the first round trip and the release
// in the commit's, so an uncontended operation costs two round trips, and
// the commit and the release apply together: if EXEC is aborted the
// release did not run either, and the lock is still held for the retry. In
// the book form (markettrace.ClientForm) the lock is taken on its own, the WATCH and
// each read are round trips of their own, and the lock is released after
// the commit: with the book's lock (supplied by markettrace.WithLockFunc), seven round
// trips for an uncontended listing, nine for a purchase.
func (m *Market) runLocked(ctx context.Context, s Strategy, name, key string, o op, cost *Cost, watch ...string) error {
	r := &lockedOp{m: m, key: key, watch: watch, o: o, cost: cost}
	defer r.release(ctx)
	var err error
	cost.Retries, err = watchtx.RunPiped(ctx, m.rdb, watchtx.Options{}, key, func(tx *redis.Tx) error {
		if err := r.readUnderLock(ctx, tx); err != nil {
			return err
		}
		if err := r.check(); err != nil {
			return r.giveUp(ctx, err)
		}
		beforeCommit(ctx, s, name)
		return r.commit(ctx)
	})
	if errors.Is(err, locking.ErrLockLost) {
		cost.LockLost = true
	}
	return contended(ctx, cost.Retries, err)
}

// lockedOp is one Coarse or Fine operation in progress (runLocked) on the
// connection tx: the lock it runs under, the keys it WATCHes and, under
// fencing, the read of the lock's token that its check compares.
type lockedOp struct {
	m     *Market
	tx    *redis.Tx
	key   string // the lock's
	watch []string
	o     op
	cost  *Cost

	h     hold
	held  bool // taken and not given back yet
	fence *redis.StringCmd
}

// readUnderLock takes the lock and reads under it on the first call. A
// later call follows an EXEC aborted because a watched key changed (the
// buyer, or under fencing the lock): the lock is still held, so only the
// WATCH and the reads are sent again.
func (r *lockedOp) readUnderLock(ctx context.Context, tx *redis.Tx) error {
	if r.tx == nil {
		r.tx = tx
		return r.acquire(ctx)
	}
	return r.read(ctx, false)
}

// acquire takes the lock. With the default mutex in the lean form, the
// WATCH and the reads travel with each attempt; when the winning attempt
// was not the first, they are sent again under the lock, watched afresh:
// changes seen by a WATCH of the first attempt while it waited must not
// abort its EXEC.
func (r *lockedOp) acquire(ctx context.Context) error {
	h, err := r.m.takeLock(ctx, r.tx, r.key, func(p redis.Pipeliner) {
		if keys := r.watched(); len(keys) > 0 {
			watchtx.Watch(ctx, p, keys...)
		}
		for _, step := range r.steps(ctx) {
			step(p)
		}
	})
	if err != nil {
		if errors.Is(err, locking.ErrNotAcquired) {
			return fmt.Errorf("%w: %w", ErrContended, err)
		}
		return err
	}
	r.h, r.held = h, true
	r.cost.LockWaits = h.waits
	if r.m.fencing && h.token == "" {
		return fmt.Errorf("%w: WithFencing needs a lease with a token, and the LockFunc returned none", ErrInvalid)
	}
	if h.readsSent {
		return nil
	}
	return r.read(ctx, true)
}

// watched is what the operation WATCHes: its keys and, fenced, the lock.
func (r *lockedOp) watched() []string {
	if r.m.fencing {
		return append(slices.Clip(r.watch), r.key)
	}
	return r.watch
}

// steps are the op's read steps, the fence's GET in the first.
func (r *lockedOp) steps(ctx context.Context) []func(p redis.Pipeliner) {
	steps := readSteps(ctx, r.o)
	if r.m.fencing && len(steps) > 0 {
		first := steps[0]
		steps[0] = func(p redis.Pipeliner) {
			r.fence = p.Get(ctx, r.key)
			first(p)
		}
	}
	return steps
}

// read WATCHes and reads under the lock (see watchAndRead).
func (r *lockedOp) read(ctx context.Context, unwatch bool) error {
	return r.m.watchAndRead(ctx, r.tx, r.watched(), unwatch, r.steps(ctx), nil)
}

// check judges what was read: under fencing, first that the lock is
// still the lease's.
func (r *lockedOp) check() error {
	if r.m.fencing && r.fence.Val() != r.h.token {
		return fmt.Errorf("market: lock %s changed hands before the commit: %w: %w", r.key, locking.ErrLockLost, locking.ErrNotHeld)
	}
	return r.o.check()
}

// giveUp ends an operation whose check failed with err: a lock whose
// release can be queued is given back in the same round trip as the
// UNWATCH; any other is released afterwards (release).
func (r *lockedOp) giveUp(ctx context.Context, err error) error {
	if r.h.queueRelease == nil {
		return err // RunPiped unwatches
	}
	var rel func() error
	_, perr := r.tx.Pipelined(ctx, func(p redis.Pipeliner) error {
		watchtx.Unwatch(ctx, p)
		rel = r.h.queueRelease(ctx, p)
		return nil
	})
	if perr == nil {
		r.released(rel)
	}
	return watchtx.Unwatched(err)
}

// commit sends MULTI, the writes, the lock's release when it can be
// queued, and EXEC. It returns redis.TxFailedErr when a watched key
// changed: nothing applied, the lock still held.
func (r *lockedOp) commit(ctx context.Context) error {
	var rel func() error
	cmds, err := r.tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
		r.o.write(ctx, p)
		if r.h.queueRelease != nil {
			rel = r.h.queueRelease(ctx, p)
		}
		return nil
	})
	err = execErr(cmds, err)
	if err == nil && rel != nil {
		r.released(rel)
	}
	return sent(err)
}

// released records a release queued in a pipeline that ran: rel is its
// outcome.
func (r *lockedOp) released(rel func() error) {
	r.held = false
	if errors.Is(rel(), locking.ErrNotHeld) {
		r.cost.LockLost = true
	}
}

// release gives back a lock still held when the operation ends, even if
// ctx has ended, but without waiting long for it.
func (r *lockedOp) release(ctx context.Context) {
	if !r.held || r.h.release == nil {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	if err := r.h.release(rctx); errors.Is(err, locking.ErrNotHeld) {
		r.cost.LockLost = true
	}
}
