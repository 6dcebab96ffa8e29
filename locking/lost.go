package locking

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Lost replies. An acquisition whose reply does not come back (a read
// timeout, a broken connection) may still have been applied: the server
// may run the SET after the client gave up, when it resumes from a stall.
// Nobody would then release that lock before its lease ends. So a Mutex
// releases such an acquisition's token in the background, once Redis
// answers again; and an acquisition that finds the key holding its own
// token (the client sent it again after losing the first reply, as
// go-redis does after a read timeout) is granted, not refused.

// lostBackoff spaces the attempts to release a lost acquisition.
var lostBackoff = Backoff{Min: time.Millisecond, Max: 100 * time.Millisecond}

// maybeApplied reports whether an acquisition that failed with err may
// have been applied all the same (OutcomeOf: Unknown): the command may
// have reached Redis and only its reply was lost. A plain SET that Redis
// answered with an error did not run; a script (fenced) may have run its
// SET before failing.
func maybeApplied(err error, script bool) bool {
	var reply redis.Error
	if !script && errors.As(err, &reply) {
		return false
	}
	return OutcomeOf(err) == Unknown
}

// releaseLost releases, in the background, the hold with token whose
// acquisition's reply was lost: it sends the compare-and-delete until Redis
// answers it, with a backoff, for at most ttl from now. A reply "not
// ours" is trusted only from an attempt sent after an earlier one was
// answered: when the server resumes from a stall, the lost SET and a
// release waiting beside it may run in either order, but a command sent
// after an answer runs after both.
func (m *Mutex) releaseLost(token string) {
	until := time.Now().Add(m.ttl)
	m.lost.start(func(stop context.Context) {
		ctx, cancel := context.WithDeadline(stop, until)
		defer cancel()
		answered := false
		for n := 0; ; n++ {
			released, err := m.releaseToken(ctx, token)
			switch {
			case err == nil && (released || answered):
				return
			case err == nil:
				answered = true
			case errors.Is(err, redis.ErrClosed):
				return
			}
			if ClockFrom(ctx).Sleep(ctx, lostBackoff.Delay(n)) != nil {
				return
			}
		}
	})
}

// releaseToken deletes the lock if it holds token (publishing a wake-up
// for a mutex made WithWakeups) and reports whether it did.
func (m *Mutex) releaseToken(ctx context.Context, token string) (bool, error) {
	var n int
	var err error
	if m.wakeups {
		n, err = releasePublishScript.Run(ctx, m.rdb, []string{m.key}, token, wakeupChannel(m.key)).Int()
	} else {
		n, err = releaseScript.Run(ctx, m.rdb, []string{m.key}, token).Int()
	}
	return n == 1, err
}

// releaseOnce sends l's compare-and-delete and returns how many keys it
// deleted.
func (l *Lock) releaseOnce(ctx context.Context) (int, error) {
	if l.channel != "" {
		return releasePublishScript.Run(ctx, l.rdb, []string{l.Key()}, l.Token(), l.channel).Int()
	}
	return releaseScript.Run(ctx, l.rdb, []string{l.Key()}, l.Token()).Int()
}

// transient are the first words of the error replies with which Redis
// refuses a command for a while, before running it: a restarted server
// still loading its data (LOADING), a replica that lost its master
// (MASTERDOWN), a cluster slot in migration (TRYAGAIN). The same command
// sent again later runs.
var transient = []string{"LOADING", "MASTERDOWN", "TRYAGAIN"}

// resendable reports whether a release that failed with err is worth
// sending again: Redis did not answer it (a lost reply, a dropped or
// refused connection, a server down) or refused it for a while without
// running it (transient). A closed client, and any other error reply, end
// it: resending would fail the same way.
func resendable(err error) bool {
	var reply redis.Error
	switch {
	case err == nil, errors.Is(err, redis.ErrClosed):
		return false
	case errors.As(err, &reply):
		word, _, _ := strings.Cut(reply.Error(), " ")
		return slices.Contains(transient, word)
	}
	return true
}

// releaseUnanswered starts the background release of l after a Release
// that failed with err, when Redis did not answer it or refused it for a
// while (resendable): the release did not run, or may not have, and the
// lock, which Redis keeps across a restart with an append-only file or a
// snapshot, would block every other client until its lease ended. It
// sends the compare-and-delete again, with a backoff, until Redis answers
// it, or l's lease ends, or Settle stops it. A server that restarts with
// much data answers LOADING for as long as it reads it: the release is
// sent again through that, and runs as soon as loading ends. It reports
// whether it started.
func (l *Lock) releaseUnanswered(err error) bool {
	if l.lost == nil || !resendable(err) {
		return false
	}
	until := l.Expires()
	l.lost.start(func(stop context.Context) {
		ctx, cancel := context.WithDeadline(stop, until)
		defer cancel()
		for n := 0; ; n++ {
			_, err := l.releaseOnce(ctx)
			if !resendable(err) {
				return // answered: released, or held by no one or someone else
			}
			if ClockFrom(ctx).Sleep(ctx, lostBackoff.Delay(n)) != nil {
				return
			}
		}
	})
	return true
}

// Settle waits until the background releases of this mutex's lost
// acquisitions, and of its holds whose Release Redis did not answer, have
// ended. If ctx ends first, it stops them (each ends
// once its command in flight returns, within the client's timeouts),
// waits for them, and returns ctx's error. Each also ends by itself once
// Redis answers, one lease after its acquisition failed, or when the
// client is closed.
func (m *Mutex) Settle(ctx context.Context) error {
	return m.lost.settle(ctx)
}

// backgroundReleases runs and counts background releases.
type backgroundReleases struct {
	mu     sync.Mutex
	n      int
	idle   chan struct{} // closed when n drops to 0
	ctx    context.Context
	cancel context.CancelFunc // stops the running releases
}

// start runs fn in a goroutine of its own, with a context that settle
// cancels to stop it.
func (r *backgroundReleases) start(fn func(ctx context.Context)) {
	r.mu.Lock()
	if r.n == 0 {
		r.idle = make(chan struct{})
		r.ctx, r.cancel = context.WithCancel(context.Background())
	}
	r.n++
	ctx := r.ctx
	r.mu.Unlock()
	go func() {
		defer r.done()
		fn(ctx)
	}()
}

func (r *backgroundReleases) done() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n--
	if r.n == 0 {
		r.cancel()
		close(r.idle)
	}
}

// settle waits for the running releases, stopping them if ctx ends first.
func (r *backgroundReleases) settle(ctx context.Context) error {
	r.mu.Lock()
	if r.n == 0 {
		r.mu.Unlock()
		return nil
	}
	idle, cancel := r.idle, r.cancel
	r.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		cancel()
		<-idle
		return ctx.Err()
	}
}
