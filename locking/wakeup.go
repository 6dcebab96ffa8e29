package locking

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

var releasePublishScript = redis.NewScript(`
-- KEYS: lock; ARGV: token, channel
if redis.call("get", KEYS[1]) == ARGV[1] then
	redis.call("del", KEYS[1])
	redis.call("publish", ARGV[2], "released")
	return 1
end
return 0`)

// wakeIdle is how long a wake-up subscription outlives its last waiter: a
// channel nobody has waited on for this long is unsubscribed, and a
// client's subscription connection with no channels left is closed and its
// goroutine ends. Keeping it a little while spares a lock that is contended
// on and off a reconnect per wait.
const wakeIdle = time.Second

// wakeHubs holds one wakeHub per client that has waiters. Its mutex also
// guards every hub's channels and waiters.
var wakeHubs = struct {
	sync.Mutex
	m map[redis.UniversalClient]*wakeHub
}{m: map[redis.UniversalClient]*wakeHub{}}

// wakeHub is one client's wake-up subscription: one pub/sub connection,
// subscribed to the channels its waiters wait on, and one goroutine that
// reads it and wakes one local waiter per release message. It closes
// itself once idle (wakeIdle).
type wakeHub struct {
	rdb   redis.UniversalClient
	ps    *redis.PubSub
	chans map[string]*wakeChannel
	users int
}

// wakeChannel is one channel of a hub and its waiters in arrival order.
type wakeChannel struct {
	ready     chan struct{} // closed once SUBSCRIBE is confirmed
	confirmed bool
	waiters   []*waker
	lastUsed  time.Time
}

// waker is one waiting Acquire's membership of a hub.
type waker struct {
	hub     *wakeHub
	channel string
	ready   <-chan struct{}
	// wake receives at most one pending wake-up.
	wake chan struct{}
}

// joinWakeups registers a waiter for channel on rdb's hub, creating the
// hub (and its goroutine) or subscribing the channel as needed.
func joinWakeups(rdb redis.UniversalClient, channel string) *waker {
	wakeHubs.Lock()
	h := wakeHubs.m[rdb]
	if h == nil {
		h = &wakeHub{rdb: rdb, ps: rdb.Subscribe(context.Background()), chans: map[string]*wakeChannel{}}
		wakeHubs.m[rdb] = h
		go h.run(h.ps.ChannelWithSubscriptions())
	}
	c := h.chans[channel]
	subscribe := c == nil
	if subscribe {
		c = &wakeChannel{ready: make(chan struct{})}
		h.chans[channel] = c
	}
	w := &waker{hub: h, channel: channel, ready: c.ready, wake: make(chan struct{}, 1)}
	c.waiters = append(c.waiters, w)
	c.lastUsed = time.Now()
	h.users++
	wakeHubs.Unlock()
	if subscribe {
		// On an error the waiter falls back on its backoff; the
		// connection resubscribes its channels when it reconnects.
		_ = h.ps.Subscribe(context.Background(), channel)
	}
	return w
}

// awaitReady waits until the channel's subscription is confirmed, for at
// most d, or until ctx ends (then it returns ctx.Err()).
func (w *waker) awaitReady(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.ready:
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// leave unregisters the waiter. A wake-up it received but did not use is
// passed on to the next waiter of the channel.
func (w *waker) leave() {
	wakeHubs.Lock()
	defer wakeHubs.Unlock()
	h := w.hub
	h.users--
	c := h.chans[w.channel]
	if c == nil {
		return
	}
	for i, o := range c.waiters {
		if o == w {
			c.waiters = append(c.waiters[:i], c.waiters[i+1:]...)
			break
		}
	}
	c.lastUsed = time.Now()
	select {
	case <-w.wake:
		c.wakeOne()
	default:
	}
}

// wakeOne wakes the longest-waiting waiter that has no wake-up pending and
// moves it to the back. Called with wakeHubs locked.
func (c *wakeChannel) wakeOne() {
	for i, w := range c.waiters {
		select {
		case w.wake <- struct{}{}:
			c.waiters = append(append(c.waiters[:i:i], c.waiters[i+1:]...), w)
			return
		default:
		}
	}
}

// run dispatches the hub's messages until the hub has been idle for
// wakeIdle, then closes it.
func (h *wakeHub) run(msgs <-chan any) {
	tick := time.NewTicker(wakeIdle / 2)
	defer tick.Stop()
	for {
		select {
		case msg, ok := <-msgs:
			if !ok {
				// The client was closed: forget the hub so that a later
				// waiter on a new client of the same address starts over.
				wakeHubs.Lock()
				if wakeHubs.m[h.rdb] == h {
					delete(wakeHubs.m, h.rdb)
				}
				wakeHubs.Unlock()
				_ = h.ps.Close()
				return
			}
			wakeHubs.Lock()
			switch msg := msg.(type) {
			case *redis.Subscription:
				if c := h.chans[msg.Channel]; c != nil && msg.Kind == "subscribe" && !c.confirmed {
					c.confirmed = true
					close(c.ready)
				}
			case *redis.Message:
				if c := h.chans[msg.Channel]; c != nil {
					c.wakeOne()
				}
			}
			wakeHubs.Unlock()
		case now := <-tick.C:
			if h.sweep(now) {
				return
			}
		}
	}
}

// sweep unsubscribes channels without waiters that have been idle for
// wakeIdle, and closes the hub when it has neither channels nor users. It
// reports whether the hub was closed.
func (h *wakeHub) sweep(now time.Time) bool {
	wakeHubs.Lock()
	var idle []string
	for name, c := range h.chans {
		if len(c.waiters) == 0 && now.Sub(c.lastUsed) >= wakeIdle {
			idle = append(idle, name)
			delete(h.chans, name)
		}
	}
	closing := h.users == 0 && len(h.chans) == 0
	if closing {
		delete(wakeHubs.m, h.rdb)
	} else if len(idle) > 0 {
		// Under the lock, so that a waiter who subscribes one of these
		// channels again does so after this UNSUBSCRIBE.
		_ = h.ps.Unsubscribe(context.Background(), idle...)
	}
	wakeHubs.Unlock()
	if closing {
		// Close ends the message channel's goroutines too.
		_ = h.ps.Close()
	}
	return closing
}
