package httpapi

import (
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lockmarket/lockmarket/internal/service/exploresession"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// sendWith sends one request with the given headers straight to h.
func sendWith(h http.Handler, method, path, body string, header map[string]string) response {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return response{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

// TestCrossOriginWritesRefused sends what any web page can make a browser
// send without a preflight (a JSON body declared text/plain or a form) and
// JSON writes from another origin: each is refused and changes nothing;
// the page's own origin and clients that send no Origin pass.
func TestCrossOriginWritesRefused(t *testing.T) {
	f := newFixture(t, redistest.Mini(t))
	h := f.srv.Handler()
	buy := `{"buyer":"carol","seller":"alice","item":"sword","price":50}`
	rush := `{"buyers":1,"duration_ms":1000,"strategies":["lua"]}`
	before := redistest.Snapshot(t, f.rdb)
	refused := []struct {
		name, method, path, body string
		header                   map[string]string
		status                   int
		code                     string
	}{
		{"purchase as text/plain", "POST", "/api/purchases", buy,
			map[string]string{"Content-Type": "text/plain", "Origin": "http://evil.example"}, 403, CodeForbidden},
		{"purchase as text/plain, no origin", "POST", "/api/purchases", buy,
			map[string]string{"Content-Type": "text/plain"}, 415, CodeUnsupportedMedia},
		{"purchase as a form", "POST", "/api/purchases", buy,
			map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415, CodeUnsupportedMedia},
		{"purchase without a type", "POST", "/api/purchases", buy, nil, 415, CodeUnsupportedMedia},
		{"purchase from another origin", "POST", "/api/purchases", buy,
			map[string]string{"Content-Type": "application/json", "Origin": "http://evil.example"}, 403, CodeForbidden},
		{"purchase from another port", "POST", "/api/purchases", buy,
			map[string]string{"Content-Type": "application/json", "Origin": "http://example.com:8081"}, 403, CodeForbidden},
		{"purchase from an opaque origin", "POST", "/api/purchases", buy,
			map[string]string{"Content-Type": "application/json", "Origin": "null"}, 403, CodeForbidden},
		{"rush as text/plain", "POST", "/api/rush", rush,
			map[string]string{"Content-Type": "text/plain", "Origin": "http://evil.example"}, 403, CodeForbidden},
		{"rush as text/plain, no origin", "POST", "/api/rush", rush,
			map[string]string{"Content-Type": "text/plain"}, 415, CodeUnsupportedMedia},
		{"rush from another origin", "POST", "/api/rush", rush,
			map[string]string{"Content-Type": "application/json", "Origin": "http://evil.example"}, 403, CodeForbidden},
		{"strategy from another origin", "PUT", "/api/strategy", `{"strategy":"lua"}`,
			map[string]string{"Content-Type": "application/json", "Origin": "http://evil.example"}, 403, CodeForbidden},
		{"explore from another origin", "POST", "/api/explore/sessions", `{"recipe":"4"}`,
			map[string]string{"Content-Type": "application/json", "Origin": "http://evil.example"}, 403, CodeForbidden},
		{"cancel the rush from another origin", "DELETE", "/api/rush", ``,
			map[string]string{"Origin": "http://evil.example"}, 403, CodeForbidden},
	}
	for _, tt := range refused {
		r := sendWith(h, tt.method, tt.path, tt.body, tt.header)
		if r.status != tt.status || r.code() != tt.code {
			t.Errorf("%s: %d %s, want %d %s", tt.name, r.status, r.body, tt.status, tt.code)
		}
	}
	if after := redistest.Snapshot(t, f.rdb); !maps.Equal(before, after) {
		t.Fatalf("refused writes changed the market:\nbefore %v\nafter  %v", before, after)
	}
	// httptest's requests are addressed to example.com: that is the
	// service's own origin here.
	json := map[string]string{"Content-Type": "application/json; charset=utf-8", "Origin": "http://example.com"}
	if r := sendWith(h, "PUT", "/api/strategy", `{"strategy":"lua"}`, json); r.status != 200 {
		t.Errorf("same-origin strategy change: %d %s", r.status, r.body)
	}
	if r := sendWith(h, "POST", "/api/purchases", buy, map[string]string{"Content-Type": "application/json"}); r.status != 200 {
		t.Errorf("purchase without Origin: %d %s", r.status, r.body)
	}
	audit(t, f.m)
}

// TestAdminToken: with an admin token, the routes that change the service
// take it and nothing else; the market's own routes do not need it.
func TestAdminToken(t *testing.T) {
	b := redistest.Mini(t)
	f := newFixture(t, b)
	srv, err := New(Config{Market: f.m, AdminToken: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	h := srv.Handler()
	for _, auth := range []string{"", "Bearer", "Bearer wrong", "Basic czNjcmV0", "bearer s3cret", "Bearer s3cret "} {
		hdr := map[string]string{"Content-Type": "application/json", "Authorization": auth}
		for _, rq := range [][3]string{
			{"PUT", "/api/strategy", `{"strategy":"lua"}`},
			{"POST", "/api/rush", `{"buyers":1,"duration_ms":1000,"strategies":["lua"]}`},
			{"DELETE", "/api/rush", ``},
			{"POST", "/api/lab/runs", `{"recipe":"1"}`},
		} {
			r := sendWith(h, rq[0], rq[1], rq[2], hdr)
			if r.status != http.StatusUnauthorized || r.code() != CodeUnauthorized || r.header.Get("WWW-Authenticate") == "" {
				t.Errorf("%s %s with Authorization %q: %d %s, want 401 %s", rq[0], rq[1], auth, r.status, r.body, CodeUnauthorized)
			}
		}
	}
	if srv.Strategy() == "lua" {
		t.Fatal("the strategy changed without the token")
	}
	// The explorer's sessions take no token: they never touch the served
	// Redis, and a student's browser opens one.
	withExplore, err := New(Config{Market: f.m, AdminToken: "s3cret", Explore: exploresession.NewManager(), Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	defer withExplore.Close()
	if r := sendWith(withExplore.Handler(), "POST", "/api/explore/sessions", `{"recipe":"4"}`,
		map[string]string{"Content-Type": "application/json"}); r.status != http.StatusCreated {
		t.Errorf("an explorer session without the token: %d %s, want 201", r.status, r.body)
	}
	hdr := map[string]string{"Content-Type": "application/json", "Authorization": "Bearer s3cret"}
	if r := sendWith(h, "PUT", "/api/strategy", `{"strategy":"lua"}`, hdr); r.status != 200 || srv.Strategy() != "lua" {
		t.Errorf("with the token: %d %s", r.status, r.body)
	}
	buy := `{"buyer":"carol","seller":"alice","item":"sword","price":50}`
	if r := sendWith(h, "POST", "/api/purchases", buy, map[string]string{"Content-Type": "application/json"}); r.status != 200 {
		t.Errorf("purchase without the token: %d %s", r.status, r.body)
	}
}

// TestLoopbackHosts: a service on loopback answers requests addressed to
// a loopback host only, so a page on a name rebound to 127.0.0.1 is not
// its own origin.
func TestLoopbackHosts(t *testing.T) {
	f := newFixture(t, redistest.Mini(t))
	srv, err := New(Config{Market: f.m, LoopbackHosts: true})
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]int{"evil.example:8080": 403, "example.com": 403, "10.0.0.1:8080": 403,
		"127.0.0.1:8080": 200, "localhost:8080": 200, "[::1]:8080": 200, "127.0.0.1": 200} {
		req := httptest.NewRequest("GET", "/api/strategy", nil)
		req.Host = host
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("Host %s: %d, want %d", host, rec.Code, want)
		}
	}
}

// TestExpensiveReadsLimited loops on the receipts, the market's pages and
// the users list (a page of its own each time: the same page again is
// answered from the last second's answer, TestUserListsForARoom): past
// their rate each is answered 429 with a Retry-After, and writes go on
// meanwhile.
func TestExpensiveReadsLimited(t *testing.T) {
	f := newFixture(t, redistest.Mini(t))
	h := f.srv.Handler()
	for _, path := range []string{"/api/users/alice/purchases", "/api/market?limit=500", "/api/users?offset=%d"} {
		limited := false
		for i := 0; i < 3000 && !limited; i++ {
			r := serve(h, "GET", strings.ReplaceAll(path, "%d", strconv.Itoa(i)), "")
			switch {
			case r.status == http.StatusTooManyRequests:
				limited = true
				if r.code() != CodeRateLimited || r.header.Get("Retry-After") == "" {
					t.Errorf("%s: 429 %s, Retry-After %q", path, r.body, r.header.Get("Retry-After"))
				}
			case r.status != http.StatusOK:
				t.Fatalf("%s: %d %s", path, r.status, r.body)
			}
		}
		if !limited {
			t.Errorf("%s: 3000 requests in a row, none limited", path)
		}
	}
	if r := serve(h, "POST", "/api/users", `{"name":"Dan","funds":5}`); r.status != http.StatusCreated {
		t.Errorf("a write while reads are limited: %d %s", r.status, r.body)
	}
}

// TestLabBudget: a lab request larger than the lab's body budget is
// refused before it runs anything.
func TestLabBudget(t *testing.T) {
	f := newFixture(t, redistest.Mini(t))
	body := `{"recipe":"1","pad":"` + strings.Repeat("x", labBodyLimit) + `"}`
	r := serve(f.srv.Handler(), "POST", "/api/lab/runs", body)
	if r.status != http.StatusRequestEntityTooLarge || r.code() != CodeRequestTooLarge {
		t.Errorf("lab request of %d bytes: %d %s", len(body), r.status, clip(string(r.body)))
	}
	b := newBudget("test", 10, 2)
	r1, err1 := b.acquire()
	r2, err2 := b.acquire()
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if _, err := b.acquire(); ErrorFor(err).Status != http.StatusTooManyRequests {
		t.Errorf("a third request over a budget of 2: %v, want 429", err)
	}
	r1()
	r3, err := b.acquire()
	if err != nil {
		t.Errorf("after a release: %v", err)
	} else {
		r3()
	}
	r2()
}
