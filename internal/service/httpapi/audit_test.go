package httpapi

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market"
)

// auditMark marks the context of the audit request that holdAudit holds.
type auditMark struct{}

// holdAudit is a Redis client hook that holds every command sent under a
// context carrying auditMark until release is closed, and closes entered
// when the first one arrives: it keeps an audit in flight, in the middle
// of its reads, for as long as the test wants.
type holdAudit struct {
	once     sync.Once
	entered  chan struct{}
	released chan struct{}
}

func newHoldAudit() *holdAudit {
	return &holdAudit{entered: make(chan struct{}), released: make(chan struct{})}
}

func (h *holdAudit) hold(ctx context.Context) {
	if ctx.Value(auditMark{}) == nil {
		return
	}
	h.once.Do(func() { close(h.entered) })
	select {
	case <-h.released:
	case <-ctx.Done():
	}
}

func (h *holdAudit) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *holdAudit) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.hold(ctx)
		return next(ctx, cmd)
	}
}

func (h *holdAudit) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.hold(ctx)
		return next(ctx, cmds)
	}
}

// TestAuditDoesNotStallWrites holds an audit in the middle of its reads:
// meanwhile listings and purchases under every strategy complete (the
// audit takes no gate), and a second audit is refused with 429 audit_busy
// and a Retry-After instead of running beside it. Released, the audit
// answers, clean.
func TestAuditDoesNotStallWrites(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b) // users and listings
		ctx := context.Background()
		for _, it := range []string{"bow", "axe", "cap"} {
			if err := f.m.GrantItem(ctx, "alice", it); err != nil {
				t.Fatal(err)
			}
		}
		held := newHoldAudit()
		rdb := b.NewClient(t)
		rdb.AddHook(held)
		m, err := market.New(rdb, "t")
		if err != nil {
			t.Fatal(err)
		}
		// A writer held up by the audit would give up after 1 s with
		// 503 contended.
		srv, err := New(Config{Market: m, GateTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		h := srv.Handler()

		audited := make(chan response, 1)
		go func() {
			audited <- request(context.WithValue(ctx, auditMark{}, true), h, "GET", "/api/audit", "")
		}()
		select {
		case <-held.entered:
		case r := <-audited:
			t.Fatalf("the audit answered without reading Redis: %d %s", r.status, r.body)
		}

		writes := []struct {
			path, body string
			status     int
		}{
			{"/api/purchases?strategy=fine", `{"buyer":"carol","seller":"alice","item":"sword","price":50}`, 200},
			{"/api/listings?strategy=watch", `{"seller":"alice","item":"shield","price":20}`, 201},
			{"/api/listings?strategy=coarse", `{"seller":"alice","item":"bow","price":20}`, 201},
			{"/api/listings?strategy=lua", `{"seller":"alice","item":"axe","price":20}`, 201},
			{"/api/listings?strategy=fine", `{"seller":"alice","item":"cap","price":20}`, 201},
			{"/api/purchases?strategy=lua", `{"buyer":"carol","seller":"alice","item":"axe","price":20}`, 200},
		}
		for _, w := range writes {
			if r := serve(h, "POST", w.path, w.body); r.status != w.status {
				t.Errorf("%s while an audit runs: %d %s; want %d", w.path, r.status, r.body, w.status)
			}
		}
		r := serve(h, "GET", "/api/audit", "")
		if r.status != http.StatusTooManyRequests || r.code() != CodeAuditBusy || r.header.Get("Retry-After") == "" {
			t.Errorf("second audit: %d %s (Retry-After %q); want 429 %s with Retry-After", r.status, r.body, r.header.Get("Retry-After"), CodeAuditBusy)
		}

		close(held.released)
		r = <-audited
		var a auditBody
		r.decode(t, &a)
		if r.status != http.StatusOK || a.Total != 0 {
			t.Fatalf("held audit: %d %s", r.status, r.body)
		}
	})
}

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// TestAuditSpacing checks the pause between audits over HTTP, on a clock
// the test moves: within the cooldown an audit is 429 audit_busy with the
// remaining time in Retry-After (whole seconds, rounded up), after it 200.
func TestAuditSpacing(t *testing.T) {
	b := redistest.Mini(t)
	f := newFixture(t, b)
	srv, err := New(Config{Market: f.m, AuditCooldown: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{t: time.Unix(1_000_000, 0)}
	srv.audits.now = clock.now
	steps := []struct {
		advance    time.Duration
		status     int
		retryAfter string
	}{
		{0, 200, ""},
		{0, 429, "3"},
		{1500 * time.Millisecond, 429, "2"},
		{1499 * time.Millisecond, 429, "1"},
		{time.Millisecond, 200, ""},
		{time.Second, 429, "2"},
	}
	for i, s := range steps {
		clock.add(s.advance)
		r := serve(srv.Handler(), "GET", "/api/audit", "")
		if r.status != s.status || r.header.Get("Retry-After") != s.retryAfter {
			t.Fatalf("step %d: %d %s (Retry-After %q); want %d (Retry-After %q)", i, r.status, r.body, r.header.Get("Retry-After"), s.status, s.retryAfter)
		}
		if r.status == http.StatusTooManyRequests && r.code() != CodeAuditBusy {
			t.Fatalf("step %d: %s", i, r.body)
		}
	}
}

// TestAuditLimiter checks that the pause after an audit is the cooldown,
// or 19 times the audit's duration when that is longer, so that audits
// take at most 5% of the time; and that one runs at a time.
func TestAuditLimiter(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_000_000, 0)}
	l := auditLimiter{now: clock.now, cooldown: time.Second}
	tests := []struct {
		took      time.Duration // the audit's duration
		wantPause time.Duration
	}{
		{10 * time.Millisecond, time.Second},
		{2 * time.Second, 38 * time.Second},
		{50 * time.Millisecond, time.Second},
	}
	for i, tt := range tests {
		if wait, busy := l.start(); busy != "" {
			t.Fatalf("audit %d refused: %s, wait %v", i, busy, wait)
		}
		if wait, busy := l.start(); busy == "" || wait <= 0 {
			t.Fatalf("audit %d: a second one started beside it", i)
		}
		begun := clock.now()
		clock.add(tt.took)
		l.finish(begun)
		if wait, busy := l.start(); busy == "" || wait != tt.wantPause {
			t.Fatalf("audit %d of %v: wait %v (%q); want %v", i, tt.took, wait, busy, tt.wantPause)
		}
		clock.add(tt.wantPause - time.Nanosecond)
		if _, busy := l.start(); busy == "" {
			t.Fatalf("audit %d of %v: the next started before the pause ended", i, tt.took)
		}
		clock.add(time.Nanosecond)
	}
}
