package httpapi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/failure/pausedholder"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market"
	"github.com/lockmarket/lockmarket/market/markettrace"
)

// faultReadTimeout is the read timeout of the fault tests' Redis client:
// a reply that does not come within it is lost.
const faultReadTimeout = 300 * time.Millisecond

// faultFixture is a market on a private redis-server, served as the
// service serves it: no ledger, and a Redis client that never resends a
// command (as internal/redis/redisconn makes them), here with a short read
// timeout. Users: alice (100, lists sword at 50, owns shield), carol
// (1000), dave (1000, who bought a warm-up item under lua, so the scripts
// are cached by the server).
type faultFixture struct {
	b   *redistest.Backend
	m   *market.Market
	srv *Server
}

func newFaultFixture(t *testing.T) *faultFixture {
	t.Helper()
	b := redistest.Real(t)
	f := &faultFixture{b: b}
	f.m, f.srv = f.process(t)
	ctx := context.Background()
	for _, u := range []struct {
		id    string
		funds int64
	}{{"alice", 100}, {"carol", 1000}, {"dave", 1000}} {
		if _, err := f.m.CreateUser(ctx, u.id, u.id, u.funds); err != nil {
			t.Fatal(err)
		}
	}
	for _, it := range []string{"sword", "shield", "warmup"} {
		if err := f.m.GrantItem(ctx, "alice", it); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.m.List(ctx, market.Lua, "alice", "warmup", 10); err != nil {
		t.Fatal(err)
	}
	if _, err := f.m.Purchase(ctx, market.Lua, "dave", "alice", "warmup", 10); err != nil {
		t.Fatal(err)
	}
	if _, err := f.m.List(ctx, market.Fine, "alice", "sword", 50); err != nil {
		t.Fatal(err)
	}
	return f
}

// process is another service process on the fixture's Redis: a client, a
// market and a server of its own.
func (f *faultFixture) process(t *testing.T) (*market.Market, *Server) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: f.b.Addr(), MaxRetries: -1,
		ReadTimeout: faultReadTimeout, WriteTimeout: faultReadTimeout})
	t.Cleanup(func() { rdb.Close() })
	m, err := market.New(rdb, "t")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{Market: m})
	if err != nil {
		t.Fatal(err)
	}
	return m, srv
}

// stallAtCommit returns a context whose operation stops redis-server
// (SIGSTOP) just before it commits: the commit is written to a stopped
// server and its reply is lost. resume continues the server.
func (f *faultFixture) stallAtCommit(t *testing.T) (ctx context.Context, resume func()) {
	t.Helper()
	var once sync.Once
	var serr error
	ctx = pausedholder.WithBeforeCommit(context.Background(), func(context.Context, string, string) {
		once.Do(func() { serr = f.b.Server.Signal(syscall.SIGSTOP) })
	})
	resume = func() {
		t.Helper()
		if err := f.b.Server.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		if serr != nil {
			t.Fatalf("stop redis-server: %v", serr)
		}
	}
	return ctx, resume
}

// auditBody is the answer of GET /api/audit.
type auditBody struct {
	Violations    market.Violations `json:"violations"`
	Total         int               `json:"total"`
	Details       []string          `json:"details"`
	LedgerChecked bool              `json:"ledger_checked"`
}

func getAudit(t *testing.T, h http.Handler) auditBody {
	t.Helper()
	r := serve(h, "GET", "/api/audit", "")
	if r.status != http.StatusOK {
		t.Fatalf("audit: %d %s", r.status, r.body)
	}
	var a auditBody
	r.decode(t, &a)
	return a
}

// TestUnknownOutcome stalls Redis between a purchase's reads and its
// commit, past the client's read timeout: the commit was sent and applies
// when Redis resumes, but its reply is lost. The service must not say
// "nothing was applied": it answers 503 outcome_unknown; a retry with the
// same Idempotency-Key then answers 200 "replayed" and the purchase is
// applied exactly once, under every strategy.
func TestUnknownOutcome(t *testing.T) {
	redistest.SkipShort(t, redistest.NeedServer) // real time or real load: the full run has it
	for _, st := range market.Strategies {
		t.Run(string(st), func(t *testing.T) {
			f := newFaultFixture(t)
			h := f.srv.Handler()
			body := `{"buyer":"carol","seller":"alice","item":"sword","price":50}`
			path := "/api/purchases?strategy=" + string(st)
			ctx, resume := f.stallAtCommit(t)
			r := request(ctx, h, "POST", path, body, withKey("carol-sword")...)
			resume()
			if r.status != http.StatusServiceUnavailable || r.code() != CodeOutcomeUnknown ||
				r.header.Get("Retry-After") != "1" || !strings.Contains(string(r.body), HeaderIdempotencyKey) {
				t.Fatalf("stalled purchase: %d %s (Retry-After %q); want 503 %s telling to retry with the same %s",
					r.status, r.body, r.header.Get("Retry-After"), CodeOutcomeUnknown, HeaderIdempotencyKey)
			}
			// The commit reached Redis before the stall, and applies now.
			redistest.WaitFor(t, "the stalled purchase applied", func() bool {
				return f.b.Client.Exists(context.Background(), markettrace.KeysOf(f.m).Op("carol-sword")).Val() == 1
			})
			for range 2 {
				r := request(context.Background(), h, "POST", path, body, withKey("carol-sword")...)
				var p purchaseResponse
				r.decode(t, &p)
				if r.status != http.StatusOK || !p.Replayed || p.Item != "sword" {
					t.Fatalf("retry with the same key: %d %s; want 200 replayed", r.status, r.body)
				}
			}
			ctx2 := context.Background()
			carol, _ := f.m.GetUser(ctx2, "carol")
			alice, _ := f.m.GetUser(ctx2, "alice")
			if carol.Funds != 950 || alice.Funds != 160 || !slices.Contains(carol.Inventory, "sword") {
				t.Errorf("carol %+v, alice %+v; want the purchase applied once", carol, alice)
			}
			var receipts struct{ Receipts []market.Receipt }
			serve(h, "GET", "/api/users/carol/purchases", "").decode(t, &receipts)
			if len(receipts.Receipts) != 1 || receipts.Receipts[0].Op != "carol-sword" {
				t.Errorf("carol's receipts %+v; want one, with the key", receipts.Receipts)
			}
			if a := getAudit(t, h); a.Total != 0 {
				t.Errorf("audit: %+v", a)
			}
		})
	}
}

// TestAuditAfterUnknownOutcome stalls a purchase without an
// Idempotency-Key the same way: it applies, but the client was told the
// outcome is unknown. The audit of this service process and of another
// one on the same Redis count the sale (no false not_paid_once), because
// they check sales from the receipts in Redis, not from what a process
// saw; and a payment undone out of band is found by yet another process.
func TestAuditAfterUnknownOutcome(t *testing.T) {
	redistest.SkipShort(t, redistest.NeedServer) // real time or real load: the full run has it
	for _, st := range market.Strategies {
		t.Run(string(st), func(t *testing.T) {
			f := newFaultFixture(t)
			ctx, resume := f.stallAtCommit(t)
			r := request(ctx, f.srv.Handler(), "POST", "/api/purchases?strategy="+string(st),
				`{"buyer":"carol","seller":"alice","item":"sword","price":50}`)
			resume()
			if r.status != http.StatusServiceUnavailable || r.code() != CodeOutcomeUnknown {
				t.Fatalf("stalled purchase: %d %s; want 503 %s", r.status, r.body, CodeOutcomeUnknown)
			}
			bg := context.Background()
			redistest.WaitFor(t, "the stalled purchase applied", func() bool {
				return f.b.Client.SIsMember(bg, markettrace.KeysOf(f.m).Inventory("carol"), "sword").Val()
			})
			_, second := f.process(t)
			for i, srv := range []*Server{f.srv, second} {
				a := getAudit(t, srv.Handler())
				if a.Total != 0 || a.LedgerChecked {
					t.Errorf("audit of process %d after the unknown outcome: %+v; want clean, from state alone", i+1, a)
				}
			}
			// Give carol her 50 back and take it from alice, out of band:
			// money is conserved, but the sale is no longer paid.
			if err := f.b.Client.HIncrBy(bg, markettrace.KeysOf(f.m).User("carol"), "funds", 50).Err(); err != nil {
				t.Fatal(err)
			}
			if err := f.b.Client.HIncrBy(bg, markettrace.KeysOf(f.m).User("alice"), "funds", -50).Err(); err != nil {
				t.Fatal(err)
			}
			_, third := f.process(t)
			a := getAudit(t, third.Handler())
			if a.Violations != (market.Violations{NotPaidOnce: 2}) {
				t.Errorf("audit after an unpaid sale: %+v; want not_paid_once 2 (carol and alice)", a)
			}
		})
	}
}

// busyScript keeps Redis busy until SCRIPT KILL.
const busyScript = "while true do end"

// TestRedisRefusals makes a private redis-server refuse writes (OOM:
// maxmemory 1 with noeviction) and then every command (BUSY: a script
// running past busy-reply-threshold): listings and purchases under every
// strategy answer 503 redis_oom or redis_busy with Retry-After, apply
// nothing, and succeed once Redis is back.
func TestRedisRefusals(t *testing.T) {
	for _, st := range market.Strategies {
		t.Run(string(st), func(t *testing.T) {
			f := newFaultFixture(t)
			h := f.srv.Handler()
			rdb := f.b.Client
			ctx := context.Background()
			writes := []struct{ path, body string }{
				{"/api/purchases?strategy=" + string(st), `{"buyer":"carol","seller":"alice","item":"sword","price":50}`},
				{"/api/listings?strategy=" + string(st), `{"seller":"alice","item":"shield","price":20}`},
			}
			// refused checks that every write is refused with code. A
			// busy server answers no read either: the state is compared
			// after the script is killed.
			refused := func(code string) {
				t.Helper()
				var before map[string]string
				if code != CodeRedisBusy {
					before = redistest.Snapshot(t, rdb)
				}
				for _, w := range writes {
					r := serve(h, "POST", w.path, w.body)
					if r.status != http.StatusServiceUnavailable || r.code() != code || r.header.Get("Retry-After") == "" {
						t.Errorf("%s: %d %s (Retry-After %q); want 503 %s with Retry-After", w.path, r.status, r.body, r.header.Get("Retry-After"), code)
					}
				}
				if before == nil {
					return
				}
				if after := redistest.Snapshot(t, rdb); !maps.Equal(before, after) {
					t.Errorf("market changed under %s", code)
				}
			}

			before := redistest.Snapshot(t, rdb)
			for _, kv := range [][2]string{{"maxmemory-policy", "noeviction"}, {"maxmemory", "1"}} {
				if err := rdb.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
					t.Fatal(err)
				}
			}
			refused(CodeRedisOOM)
			if r := serve(h, "GET", "/api/users/carol", ""); r.status != http.StatusOK {
				t.Errorf("a read while out of memory: %d %s", r.status, r.body)
			}
			if err := rdb.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
				t.Fatal(err)
			}

			if err := rdb.ConfigSet(ctx, "busy-reply-threshold", "10").Err(); err != nil {
				t.Fatal(err)
			}
			script := redis.NewClient(&redis.Options{Addr: f.b.Addr(), MaxRetries: -1, ReadTimeout: -1})
			defer script.Close()
			ran := make(chan error, 1)
			go func() { ran <- script.Eval(ctx, busyScript, nil).Err() }()
			redistest.WaitFor(t, "Redis answers BUSY", func() bool { return redis.HasErrorPrefix(rdb.Ping(ctx).Err(), "BUSY") })
			refused(CodeRedisBusy)
			if err := rdb.ScriptKill(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			if err := <-ran; err == nil || !strings.Contains(err.Error(), "killed") {
				t.Fatalf("busy script ended with %v; want it killed", err)
			}
			if after := redistest.Snapshot(t, rdb); !maps.Equal(before, after) {
				t.Fatal("market changed while Redis refused")
			}

			for _, w := range writes {
				if r := serve(h, "POST", w.path, w.body); r.status/100 != 2 {
					t.Errorf("%s after Redis recovered: %d %s", w.path, r.status, r.body)
				}
			}
			if a := getAudit(t, h); a.Total != 0 {
				t.Errorf("audit: %+v", a)
			}
		})
	}
}

// TestRedisReplyCodes maps the error replies Redis sends when it refuses
// a command, as a real server sends them through the real client (a
// script returns each reply, with the text Redis uses), and the
// out-of-band state a WRONGTYPE reveals. None is a 500.
func TestRedisReplyCodes(t *testing.T) {
	t.Parallel() // servers of its own
	b := redistest.Real(t)
	ctx := context.Background()
	tests := []struct {
		reply  string
		status int
		code   string
	}{
		{"OOM command not allowed when used memory > 'maxmemory'.", 503, CodeRedisOOM},
		{"BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.", 503, CodeRedisBusy},
		{"LOADING Redis is loading the dataset in memory", 503, CodeRedisLoading},
		{"READONLY You can't write against a read only replica.", 503, CodeRedisReadOnly},
		{"MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.", 503, CodeRedisMasterDown},
		{"TRYAGAIN Multiple keys request during rehashing of slot", 503, CodeRedisTryAgain},
		{"CLUSTERDOWN The cluster is down", 503, CodeRedisClusterDown},
		{"MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk.", 503, CodeRedisMisconf},
		{"NOREPLICAS Not enough good replicas to write.", 503, CodeRedisNoReplicas},
		{"ERR max number of clients reached", 503, CodeRedisUnavailable},
		{"NOAUTH Authentication required.", 503, CodeRedisUnavailable},
		{"WRONGTYPE Operation against a key holding the wrong kind of value", 409, CodeCorruptState},
		{"BUSYKEY Target key name already exists.", 503, CodeRedisError},
		{"ERR unknown command 'FOO'", 503, CodeRedisError},
	}
	for _, tt := range tests {
		t.Run(tt.code+"/"+strings.Fields(tt.reply)[0], func(t *testing.T) {
			err := b.Client.Eval(ctx, "return redis.error_reply(ARGV[1])", nil, tt.reply).Err()
			var rerr redis.Error
			if !errors.As(err, &rerr) || rerr.Error() != tt.reply {
				t.Fatalf("script reply %v; want the error reply %q", err, tt.reply)
			}
			got := ErrorFor(fmt.Errorf("purchase sword: %w", err))
			if got.Status != tt.status || got.Code != tt.code || got.Message == "" {
				t.Fatalf("ErrorFor(%q) = %d %s %q, want %d %s", tt.reply, got.Status, got.Code, got.Message, tt.status, tt.code)
			}
			if tt.status == http.StatusServiceUnavailable && got.RetryAfter <= 0 {
				t.Error("no Retry-After")
			}
		})
	}
	// Real refusals, not replayed by a script.
	if err := b.Client.Set(ctx, "s", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got := ErrorFor(b.Client.HIncrBy(ctx, "s", "funds", 1).Err()); got.Code != CodeCorruptState {
		t.Errorf("HINCRBY on a string: %s", got.Code)
	}
	for _, kv := range [][2]string{{"maxmemory-policy", "noeviction"}, {"maxmemory", "1"}} {
		if err := b.Client.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if got := ErrorFor(b.Client.Set(ctx, "k", "v", 0).Err()); got.Code != CodeRedisOOM {
		t.Errorf("SET over maxmemory: %s", got.Code)
	}
}
