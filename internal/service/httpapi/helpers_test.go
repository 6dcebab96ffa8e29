package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/service/demo"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market"
)

// fixture is a market with three users:
//
//	alice: 100, owns shield, lists sword at 50
//	bob:   30
//	carol: 1000
type fixture struct {
	srv *Server
	m   *market.Market
	rdb redis.UniversalClient
}

func newFixture(t *testing.T, b *redistest.Backend) *fixture {
	t.Helper()
	ctx := context.Background()
	if err := b.Client.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	m, err := market.New(b.Client, "t", market.WithLedger(market.NewLedger()))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{Market: m})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []struct {
		id    string
		funds int64
	}{{"alice", 100}, {"bob", 30}, {"carol", 1000}} {
		if _, err := m.CreateUser(ctx, u.id, strings.ToUpper(u.id[:1])+u.id[1:], u.funds); err != nil {
			t.Fatal(err)
		}
	}
	for _, it := range []string{"sword", "shield"} {
		if err := m.GrantItem(ctx, "alice", it); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.List(ctx, market.Fine, "alice", "sword", 50); err != nil {
		t.Fatal(err)
	}
	return &fixture{srv: srv, m: m, rdb: b.Client}
}

// response is a recorded answer.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) code() string {
	var e errorBody
	json.Unmarshal(r.body, &e)
	return e.Error.Code
}

func (r response) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// serve sends one request straight to the handler.
func serve(h http.Handler, method, path, body string) response {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return response{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

// send sends one request to a running server. It reports a failure with
// t.Errorf and returns an empty response, so goroutines may call it.
func send(t *testing.T, c *http.Client, method, url, body string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Errorf("%s %s: %v", method, url, err)
		return response{}
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := c.Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", method, url, err)
		return response{}
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Errorf("%s %s: read: %v", method, url, err)
	}
	return response{status: res.StatusCode, header: res.Header, body: b}
}

// audit fails the test unless the market's audit is clean.
func audit(t *testing.T, m *market.Market) {
	t.Helper()
	rep, err := m.Audit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Total() != 0 {
		t.Fatalf("audit: %+v %v", rep.Violations, rep.Details)
	}
}

func containsLine(text, line string) bool {
	for l := range strings.Lines(text) {
		if strings.TrimSpace(l) == line {
			return true
		}
	}
	return false
}

// demoMarket is a market named "market" on b, seeded as the demo seeds
// it (demo.Seed, listings under the fine lock).
func demoMarket(t *testing.T, b *redistest.Backend, opts ...market.Option) *market.Market {
	t.Helper()
	m, err := market.New(b.Client, "market", opts...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := demo.Seed(context.Background(), m, market.Fine); err != nil {
		t.Fatal(err)
	}
	return m
}

// demoServer is the service of cfg and a test HTTP server in front of it;
// both are closed when the test ends.
func demoServer(t *testing.T, cfg Config) (*Server, *httptest.Server) {
	t.Helper()
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ts.Close()
		srv.Close()
	})
	return srv, ts
}
