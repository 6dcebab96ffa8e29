// Package queue holds a FIFO lease lock whose release hands the lock to
// the next waiter inside Redis, in the releaser's own round trip. Its
// errors are those of package locking, and its holds can be kept alive by
// locking.KeepAlive.
package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/locking"
	"github.com/lockmarket/lockmarket/locking/attempt"
	"github.com/lockmarket/lockmarket/locking/internal/lease"
)

// Mutex is a lease lock whose release hands the lock to the
// longest-waiting waiter inside Redis, in the releaser's own round trip,
// instead of freeing it for whoever asks next.
//
// A waiter appends its token to a queue (a list next to the lock key) and
// blocks with BLPOP on a list of its own. Release is one script: if the lock
// still holds the releaser's token, it pops the next live waiter, sets the
// lock to that waiter's token with the waiter's lease, and pushes a grant
// onto the waiter's list, which ends its BLPOP; only when nobody waits is
// the lock deleted. A hand-over therefore costs one round trip (the
// release, whose effect reaches the blocked waiter at once) where a
// polling lock needs two in sequence (the release, then a waiter's SET NX).
//
// Guarantees:
//   - Mutual exclusion as for locking.Mutex: at most one token is stored in the
//     lock key, only that token's owner releases or extends it, and the
//     lease expires after its ttl if the holder dies.
//   - FIFO: waiters get the lock in the order they queued. A newcomer
//     takes a free lock only when no live waiter is queued, so the wait
//     is bounded by the holds of the waiters ahead.
//   - No lost hand-over: a waiter whose ctx ends (or whose connection
//     fails) runs a script that takes it off the queue and, if it was
//     granted the lock meanwhile, hands the lock on or deletes it.
//   - A dead holder or a lease that ran out: waiters check the lock every
//     poll interval (WithPoll, default 1 s) and the first live one in
//     the queue is granted the free lock.
//
// Costs: every waiter keeps one connection of the client's pool blocked
// in BLPOP for as long as it waits (size the pool for the waiters); each
// waiter sends one more command every poll interval; each acquisition
// that waits costs one round trip to queue and one blocked read, and each
// acquire, release and queue step is a Lua script rather than a plain SET.
// A waiter that dies without leaving stays "live" for a few poll intervals
// (its liveness key, refreshed at each poll, expires after 3 intervals
// plus 1 s); a release in that window hands it the lock, which is then
// lost for one lease, as if a holder had died.
//
// A plain context cancellation (without a deadline) is noticed within one
// poll interval; a deadline is honoured exactly (the blocking read never
// outlasts it). Every key the lock uses shares the lock key's hash slot,
// so it works on Redis Cluster. Do not mix this Mutex and locking.Mutex on
// one key.
type Mutex struct {
	rdb  redis.UniversalClient
	key  string
	ttl  time.Duration
	poll time.Duration
}

// Option configures a Mutex.
type Option func(*Mutex)

// DefaultPoll is how often a waiting Mutex checks that its queue entry is
// alive and that the lock has not been left free by a dead holder.
const DefaultPoll = time.Second

// WithPoll sets how often waiters poll (see DefaultPoll). A
// shorter interval notices a dead holder's expired lease, and a cancelled
// context, sooner, for one more command per waiter per interval. Values
// below 10 ms are raised to 10 ms. Keep it below the client's ReadTimeout
// when it is under one second (go-redis's default ReadTimeout is 3 s).
func WithPoll(d time.Duration) Option {
	return func(m *Mutex) { m.poll = max(d, 10*time.Millisecond) }
}

// NewMutex returns a hand-over lock on key whose holds last ttl unless
// extended; ttl is rounded down to whole milliseconds. NewMutex panics if
// ttl is below 1 ms, as the constructors of package locking do.
func NewMutex(rdb redis.UniversalClient, key string, ttl time.Duration, opts ...Option) *Mutex {
	lease.MustTTL("queue: NewMutex", ttl)
	m := &Mutex{rdb: rdb, key: key, ttl: ttl, poll: DefaultPoll}
	for _, o := range opts {
		o(m)
	}
	return m
}

// Key is the lock key.
func (m *Mutex) Key() string { return m.key }

// TTL is the lease length of each hold.
func (m *Mutex) TTL() time.Duration { return m.ttl }

// Queued returns how many waiters are queued for the lock: those waiting,
// and any that died within the last few poll intervals and will be skipped.
func (m *Mutex) Queued(ctx context.Context) (int64, error) {
	n, err := m.rdb.LLen(ctx, queueKey(m.key)).Result()
	if err != nil {
		return 0, fmt.Errorf("queue: length of the queue of %s: %w", m.key, err)
	}
	return n, nil
}

// queueKey is the list of waiting tokens of a Mutex on key. It shares
// key's hash slot.
func queueKey(key string) string { return lease.Sibling(key, ":queue") }

// grantKey is the list on which the waiter with token blocks; a grant
// pushed there hands it the lock. It shares key's hash slot.
func grantKey(key, token string) string { return grantPrefix(key) + token }

func grantPrefix(key string) string { return lease.Sibling(key, ":grant:") }
func alivePrefix(key string) string { return lease.Sibling(key, ":waiter:") }

// grantNextLua pops queued tokens until one whose liveness key exists,
// makes it the holder with the lease length stored in that key, and
// pushes a grant (the server's time) onto its list with the same expiry,
// so a grant that is never popped goes away with its lease. Dead entries
// are dropped on the way. It returns the new holder's token or false.
const grantNextLua = `
local function grantNext(lock, queue, ap, gp)
	while true do
		local w = redis.call("lpop", queue)
		if not w then
			return false
		end
		local ttl = redis.call("get", ap .. w)
		if ttl then
			redis.call("del", ap .. w)
			redis.call("set", lock, w, "px", ttl)
			local t = redis.call("time")
			redis.call("rpush", gp .. w, t[1] .. " " .. t[2])
			redis.call("pexpire", gp .. w, ttl)
			return w
		end
	end
end
local lock, queue = KEYS[1], KEYS[2]
local tok, ap, gp = ARGV[1], ARGV[2], ARGV[3]
`

// enqueueLua queues tok (ARGV[4] is its lease in ms, ARGV[5] the liveness
// key's expiry) and keeps the queue from outliving its last live waiter.
const enqueueLua = `
local function enqueue(ttl, alive)
	redis.call("rpush", queue, tok)
	redis.call("set", ap .. tok, ttl, "px", alive)
	if redis.call("pttl", queue) < tonumber(alive) then
		redis.call("pexpire", queue, alive)
	end
end
`

// Scripts of Mutex. KEYS: lock, queue. ARGV: token, liveness-key
// prefix, grant-key prefix, then per script. Replies carrying the
// server's TIME let the waiter convert a grant's server time into a
// conservative local lease end.
var (
	// queueAcquireScript takes a free lock when no live waiter is queued
	// ({1}); otherwise it serves a free lock to the head of the queue and
	// queues tok ({0, sec, usec}). With ARGV[6] = "try" it never queues
	// ({0}).
	queueAcquireScript = redis.NewScript(grantNextLua + enqueueLua + `
if redis.call("exists", lock) == 0 and not grantNext(lock, queue, ap, gp) then
	redis.call("set", lock, tok, "px", ARGV[4])
	return {1}
end
if ARGV[6] == "try" then
	return {0}
end
enqueue(ARGV[4], ARGV[5])
local t = redis.call("time")
return {0, t[1], t[2]}`)

	// queuePollScript runs after a waiter's blocking read timed out: it
	// refreshes (or restores) the waiter's queue entry and grants a free
	// lock (dead holder, expired lease) to the head of the queue.
	queuePollScript = redis.NewScript(grantNextLua + enqueueLua + `
local t = redis.call("time")
if redis.call("get", lock) == tok then
	return {1, t[1], t[2]}
end
if redis.call("pexpire", ap .. tok, ARGV[5]) == 0 then
	enqueue(ARGV[4], ARGV[5])
elseif redis.call("pttl", queue) < tonumber(ARGV[5]) then
	redis.call("pexpire", queue, ARGV[5])
end
if redis.call("exists", lock) == 0 then
	grantNext(lock, queue, ap, gp)
end
return {0, t[1], t[2]}`)

	// queueLeaveScript takes tok off the queue and drops its grant; if tok
	// had been granted the lock, it hands it on (2) or deletes it (1).
	queueLeaveScript = redis.NewScript(grantNextLua + `
redis.call("lrem", queue, 0, tok)
redis.call("del", ap .. tok, gp .. tok)
if redis.call("get", lock) ~= tok then
	return 0
end
if grantNext(lock, queue, ap, gp) then
	return 2
end
redis.call("del", lock)
return 1`)

	// queueReleaseScript: if tok holds the lock, hand it to the next live
	// waiter (2) or delete it (1); 0 if tok does not hold it.
	queueReleaseScript = redis.NewScript(grantNextLua + `
if redis.call("get", lock) ~= tok then
	return 0
end
redis.call("del", gp .. tok)
if grantNext(lock, queue, ap, gp) then
	return 2
end
redis.call("del", lock)
return 1`)
)

// Lock is one hold of a Mutex. It has the shape of the holds of package
// locking (Key, Token, Expires, Waits, Release, Extend).
type Lock struct {
	h *lease.Hold
	m *Mutex
}

func (m *Mutex) newLock(token string, expires time.Time, waits int) *Lock {
	l := &Lock{h: lease.NewHold(m.key, token, expires), m: m}
	l.h.SetWaits(waits)
	return l
}

// Key is the locked key.
func (l *Lock) Key() string { return l.h.Key() }

// Token is the random value that identifies this hold.
func (l *Lock) Token() string { return l.h.Token() }

// Expires is a conservative estimate of when the lease ends. For a lock
// that was handed over it is computed from the server's time of the grant,
// related to local time through the waiter's last command, so it errs
// early by at most that command's one-way latency.
func (l *Lock) Expires() time.Time { return l.h.Expires() }

// Waits is how many poll intervals the acquisition waited through (0 when
// the lock was free or handed over within the first).
func (l *Lock) Waits() int { return l.h.Waits() }

func (m *Mutex) args(token string, more ...any) []any {
	return append([]any{token, alivePrefix(m.key), grantPrefix(m.key)}, more...)
}

func (m *Mutex) keys() []string { return []string{m.key, queueKey(m.key)} }

// aliveTTL is how long a waiter's queue entry counts as live without a
// poll: three intervals and a second of slack for slow round trips.
func (m *Mutex) aliveTTL() time.Duration { return 3*m.poll + time.Second }

// TryAcquire makes one attempt without queueing: it takes the lock only if
// it is free and nobody is queued for it, and returns
// locking.ErrNotAcquired otherwise.
func (m *Mutex) TryAcquire(ctx context.Context) (*Lock, error) {
	token := lease.NewToken()
	sent := locking.ClockFrom(ctx).Now()
	res, err := queueAcquireScript.Run(ctx, m.rdb, m.keys(), m.args(token, m.ttl.Milliseconds(), m.aliveTTL().Milliseconds(), "try")...).Slice()
	if err != nil {
		return nil, fmt.Errorf("queue: acquire %s: %w", m.key, err)
	}
	st, _, err := parseQueueReply(res)
	if err != nil {
		return nil, fmt.Errorf("queue: acquire %s: %w", m.key, err)
	}
	if st != 1 {
		return nil, locking.ErrNotAcquired
	}
	return m.newLock(token, sent.Add(m.ttl), 0), nil
}

// Acquire takes the lock, queueing behind earlier waiters if it is held,
// until it is handed over or ctx ends; give ctx a deadline to bound the
// wait. When ctx ends first, the error wraps both locking.ErrNotAcquired
// and the context's error, and the waiter has left the queue (a grant that
// reached it meanwhile is passed on).
func (m *Mutex) Acquire(ctx context.Context) (*Lock, error) {
	token := lease.NewToken()
	sent := locking.ClockFrom(ctx).Now()
	res, err := queueAcquireScript.Run(ctx, m.rdb, m.keys(), m.args(token, m.ttl.Milliseconds(), m.aliveTTL().Milliseconds(), "")...).Slice()
	if err != nil {
		// The script may have queued us before the reply was lost.
		m.leave(ctx, token)
		return nil, endedWhileWaiting(ctx, fmt.Errorf("queue: acquire %s: %w", m.key, err))
	}
	st, server, err := parseQueueReply(res)
	if err != nil {
		m.leave(ctx, token)
		return nil, err
	}
	if st == 1 {
		return m.newLock(token, sent.Add(m.ttl), 0), nil
	}
	return m.wait(ctx, token, sent, server)
}

// wait blocks on the waiter's grant list, polling every interval, until
// it is granted the lock or ctx ends. (sent, server) relate local time to
// the server's: the server ran the waiter's last script at server time
// `server`, no earlier than local time `sent`.
func (m *Mutex) wait(ctx context.Context, token string, sent time.Time, server time.Duration) (*Lock, error) {
	grant := grantKey(m.key, token)
	for n := 0; ; n++ {
		d := m.poll
		if dl, ok := ctx.Deadline(); ok {
			d = min(d, time.Until(dl))
		}
		if d <= 0 {
			<-ctx.Done() // the deadline has passed; its timer is about to fire
		}
		if err := ctx.Err(); err != nil {
			m.leave(ctx, token)
			return nil, fmt.Errorf("%w: %s after %d polls: %w", locking.ErrNotAcquired, m.key, n, err)
		}
		v, err := blockingPop(ctx, m.rdb, grant, d)
		if err == nil {
			granted, perr := parseServerTime(v)
			if perr != nil {
				m.leave(ctx, token)
				return nil, perr
			}
			return m.newLock(token, sent.Add(granted-server+m.ttl), n), nil
		}
		if !errors.Is(err, redis.Nil) {
			m.leave(ctx, token)
			return nil, endedWhileWaiting(ctx, fmt.Errorf("queue: wait for %s: %w", m.key, err))
		}
		if ctx.Err() != nil {
			continue // leave at the top of the loop
		}
		sent = locking.ClockFrom(ctx).Now()
		res, err := queuePollScript.Run(ctx, m.rdb, m.keys(), m.args(token, m.ttl.Milliseconds(), m.aliveTTL().Milliseconds())...).Slice()
		if err != nil {
			m.leave(ctx, token)
			return nil, endedWhileWaiting(ctx, fmt.Errorf("queue: wait for %s: %w", m.key, err))
		}
		if _, server, err = parseQueueReply(res); err != nil {
			m.leave(ctx, token)
			return nil, err
		}
	}
}

// endedWhileWaiting marks an attempt's error as locking.ErrNotAcquired
// when it failed because ctx ended.
func endedWhileWaiting(ctx context.Context, err error) error {
	return attempt.EndedWhileWaiting(ctx, err, locking.ErrNotAcquired)
}

// leaveTimeout bounds the clean-up a waiter runs when it gives up.
const leaveTimeout = 5 * time.Second

// leave runs the leave script, even when ctx has ended. If it cannot run
// (Redis unreachable), the waiter's liveness key and any grant still
// expire on their own.
func (m *Mutex) leave(ctx context.Context, token string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaveTimeout)
	defer cancel()
	_ = queueLeaveScript.Run(ctx, m.rdb, m.keys(), m.args(token)...).Err()
}

// blockingPop pops key's first element, blocking up to d (which must be
// positive). It returns redis.Nil on timeout.
func blockingPop(ctx context.Context, rdb redis.UniversalClient, key string, d time.Duration) (string, error) {
	var kv []string
	var err error
	if d >= time.Second {
		// BLPop takes whole seconds and extends the read timeout to match.
		kv, err = rdb.BLPop(ctx, d.Truncate(time.Second), key).Result()
	} else {
		kv, err = rdb.Do(ctx, "blpop", key, strconv.FormatFloat(max(d.Seconds(), 0.001), 'f', 3, 64)).StringSlice()
	}
	if err != nil {
		return "", err
	}
	if len(kv) != 2 {
		return "", fmt.Errorf("queue: BLPOP %s replied %q", key, kv)
	}
	return kv[1], nil
}

// parseQueueReply reads a script reply {status[, sec, usec]}.
func parseQueueReply(res []any) (status int64, server time.Duration, err error) {
	if len(res) == 0 {
		return 0, 0, errors.New("queue: empty script reply")
	}
	status, ok := res[0].(int64)
	if !ok {
		return 0, 0, fmt.Errorf("queue: script reply %v has no status", res)
	}
	if len(res) < 3 {
		return status, 0, nil
	}
	sec, _ := res[1].(string)
	usec, _ := res[2].(string)
	server, err = parseServerTime(sec + " " + usec)
	return status, server, err
}

// parseServerTime reads "sec usec" as written by the scripts from TIME.
func parseServerTime(s string) (time.Duration, error) {
	a, b, ok := strings.Cut(s, " ")
	sec, err1 := strconv.ParseInt(a, 10, 64)
	usec, err2 := strconv.ParseInt(b, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return 0, fmt.Errorf("queue: bad server time %q", s)
	}
	return time.Duration(sec)*time.Second + time.Duration(usec)*time.Microsecond, nil
}

// Release hands the lock to the next waiter, or deletes it when nobody
// waits, if it still holds this hold's token: one script, one round trip.
// It returns locking.ErrNotHeld if the lease had expired.
func (l *Lock) Release(ctx context.Context) error {
	return l.m.releaseToken(ctx, l.Token())
}

// releaseToken releases the hold of token as Lock.Release does. It returns
// locking.ErrNotHeld if token no longer holds the lock.
func (m *Mutex) releaseToken(ctx context.Context, token string) error {
	n, err := queueReleaseScript.Run(ctx, m.rdb, m.keys(), m.args(token)...).Int()
	if err != nil {
		return fmt.Errorf("queue: release %s: %w", m.key, err)
	}
	if n == 0 {
		return locking.ErrNotHeld
	}
	return nil
}

// Extend resets the lease to ttl from now if the lock still holds this
// token. It returns locking.ErrNotHeld otherwise.
func (l *Lock) Extend(ctx context.Context, ttl time.Duration) error {
	if err := lease.CheckTTL(ttl); err != nil {
		return err
	}
	sent := locking.ClockFrom(ctx).Now()
	n, err := lease.ExtendScript.Run(ctx, l.m.rdb, []string{l.m.key}, l.Token(), ttl.Milliseconds()).Int()
	if err != nil {
		return fmt.Errorf("queue: extend %s: %w", l.m.key, err)
	}
	if n == 0 {
		return locking.ErrNotHeld
	}
	l.h.SetExpires(sent.Add(ttl))
	return nil
}
