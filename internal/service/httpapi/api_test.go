package httpapi

import (
	"context"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market"
)

// TestRefused sends bad or impossible requests to every route: each is
// answered with its 4xx status and error code, and the market is left as
// it was.
func TestRefused(t *testing.T) {
	t.Parallel() // servers of its own
	long := strings.Repeat("a", 65)
	huge := `{"buyer":"carol","seller":"alice","item":"sword","price":50,"pad":"` + strings.Repeat("x", 1<<20) + `"}`
	tests := []struct {
		name, method, path, body string
		status                   int
		code                     string
	}{
		// POST /api/users
		{"user/malformed", "POST", "/api/users", `{"name":"Frank",`, 400, CodeInvalidRequest},
		{"user/not json", "POST", "/api/users", `name=Frank`, 400, CodeInvalidRequest},
		{"user/empty body", "POST", "/api/users", ``, 400, CodeInvalidRequest},
		{"user/array", "POST", "/api/users", `[{"name":"Frank","funds":1}]`, 400, CodeInvalidRequest},
		{"user/two values", "POST", "/api/users", `{"name":"Frank","funds":1}{"name":"x","funds":1}`, 400, CodeInvalidRequest},
		{"user/trailing garbage", "POST", "/api/users", `{"name":"Frank","funds":1} x`, 400, CodeInvalidRequest},
		{"user/unknown field", "POST", "/api/users", `{"name":"Frank","funds":43,"admin":true}`, 400, CodeInvalidRequest},
		{"user/funds wrong type", "POST", "/api/users", `{"name":"Frank","funds":"43"}`, 400, CodeInvalidRequest},
		{"user/funds fraction", "POST", "/api/users", `{"name":"Frank","funds":4.5}`, 400, CodeInvalidRequest},
		{"user/name wrong type", "POST", "/api/users", `{"name":7,"funds":43}`, 400, CodeInvalidRequest},
		{"user/missing funds", "POST", "/api/users", `{"name":"Frank"}`, 400, CodeInvalidRequest},
		{"user/missing name", "POST", "/api/users", `{"funds":43}`, 400, CodeInvalidRequest},
		{"user/null name", "POST", "/api/users", `{"name":null,"funds":43}`, 400, CodeInvalidRequest},
		{"user/empty name", "POST", "/api/users", `{"name":"","funds":43}`, 400, CodeInvalidRequest},
		{"user/negative funds", "POST", "/api/users", `{"name":"Frank","funds":-1}`, 400, CodeInvalidRequest},
		{"user/huge funds", "POST", "/api/users", `{"name":"Frank","funds":1000000000001}`, 400, CodeInvalidRequest},
		{"user/overflowing funds", "POST", "/api/users", `{"name":"Frank","funds":9223372036854775808}`, 400, CodeInvalidRequest},
		{"user/id with dot", "POST", "/api/users", `{"id":"fr.ank","name":"Frank","funds":43}`, 400, CodeInvalidRequest},
		{"user/id of 65", "POST", "/api/users", `{"id":"` + long + `","name":"Frank","funds":43}`, 400, CodeInvalidRequest},
		{"user/empty id", "POST", "/api/users", `{"id":"","name":"Frank","funds":43}`, 400, CodeInvalidRequest},
		{"user/exists", "POST", "/api/users", `{"id":"alice","name":"Alice","funds":43}`, 409, CodeAlreadyExists},
		{"user/1 MiB body", "POST", "/api/users", huge, 413, CodeRequestTooLarge},

		// GET /api/users, /api/users/:id
		{"users/limit 0", "GET", "/api/users?limit=0", ``, 400, CodeInvalidRequest},
		{"users/offset negative", "GET", "/api/users?offset=-1", ``, 400, CodeInvalidRequest},
		{"get user/unknown", "GET", "/api/users/nobody", ``, 404, CodeNotFound},
		{"get user/dot", "GET", "/api/users/al.ice", ``, 400, CodeInvalidRequest},
		{"get user/65", "GET", "/api/users/" + long, ``, 400, CodeInvalidRequest},

		// POST /api/users/:id/inventory
		{"grant/unknown user", "POST", "/api/users/nobody/inventory", `{"item":"bow"}`, 404, CodeNotFound},
		{"grant/user with dot", "POST", "/api/users/al.ice/inventory", `{"item":"bow"}`, 400, CodeInvalidRequest},
		{"grant/item exists", "POST", "/api/users/bob/inventory", `{"item":"sword"}`, 409, CodeAlreadyExists},
		{"grant/item with dot", "POST", "/api/users/bob/inventory", `{"item":"b.ow"}`, 400, CodeInvalidRequest},
		{"grant/item of 65", "POST", "/api/users/bob/inventory", `{"item":"` + long + `"}`, 400, CodeInvalidRequest},
		{"grant/missing item", "POST", "/api/users/bob/inventory", `{}`, 400, CodeInvalidRequest},
		{"grant/item wrong type", "POST", "/api/users/bob/inventory", `{"item":["bow"]}`, 400, CodeInvalidRequest},
		{"grant/unknown field", "POST", "/api/users/bob/inventory", `{"item":"bow","count":2}`, 400, CodeInvalidRequest},
		{"grant/malformed", "POST", "/api/users/bob/inventory", `{"item":}`, 400, CodeInvalidRequest},
		{"grant/1 MiB body", "POST", "/api/users/bob/inventory", huge, 413, CodeRequestTooLarge},

		// POST /api/listings
		{"list/malformed", "POST", "/api/listings", `{"seller":"alice"`, 400, CodeInvalidRequest},
		{"list/unknown field", "POST", "/api/listings", `{"seller":"alice","item":"shield","price":5,"note":""}`, 400, CodeInvalidRequest},
		{"list/price wrong type", "POST", "/api/listings", `{"seller":"alice","item":"shield","price":"5"}`, 400, CodeInvalidRequest},
		{"list/missing price", "POST", "/api/listings", `{"seller":"alice","item":"shield"}`, 400, CodeInvalidRequest},
		{"list/missing seller", "POST", "/api/listings", `{"item":"shield","price":5}`, 400, CodeInvalidRequest},
		{"list/zero price", "POST", "/api/listings", `{"seller":"alice","item":"shield","price":0}`, 400, CodeInvalidRequest},
		{"list/negative price", "POST", "/api/listings", `{"seller":"alice","item":"shield","price":-5}`, 400, CodeInvalidRequest},
		{"list/huge price", "POST", "/api/listings", `{"seller":"alice","item":"shield","price":1000000000001}`, 400, CodeInvalidRequest},
		{"list/float price", "POST", "/api/listings", `{"seller":"alice","item":"shield","price":1e30}`, 400, CodeInvalidRequest},
		{"list/seller with dot", "POST", "/api/listings", `{"seller":"al.ice","item":"shield","price":5}`, 400, CodeInvalidRequest},
		{"list/item of 65", "POST", "/api/listings", `{"seller":"alice","item":"` + long + `","price":5}`, 400, CodeInvalidRequest},
		{"list/not owned", "POST", "/api/listings", `{"seller":"bob","item":"shield","price":5}`, 409, CodeItemNotOwned},
		{"list/already listed", "POST", "/api/listings", `{"seller":"alice","item":"sword","price":5}`, 409, CodeItemNotOwned},
		{"list/unknown strategy", "POST", "/api/listings?strategy=bogus", `{"seller":"alice","item":"shield","price":5}`, 400, CodeInvalidRequest},
		{"list/1 MiB body", "POST", "/api/listings", huge, 413, CodeRequestTooLarge},

		// GET /api/market
		{"market/limit 0", "GET", "/api/market?limit=0", ``, 400, CodeInvalidRequest},
		{"market/limit 501", "GET", "/api/market?limit=501", ``, 400, CodeInvalidRequest},
		{"market/limit text", "GET", "/api/market?limit=ten", ``, 400, CodeInvalidRequest},
		{"market/offset negative", "GET", "/api/market?offset=-1", ``, 400, CodeInvalidRequest},

		// POST /api/purchases
		{"buy/malformed", "POST", "/api/purchases", `{"buyer":"carol",`, 400, CodeInvalidRequest},
		{"buy/unknown field", "POST", "/api/purchases", `{"buyer":"carol","seller":"alice","item":"sword","price":50,"tip":1}`, 400, CodeInvalidRequest},
		{"buy/price wrong type", "POST", "/api/purchases", `{"buyer":"carol","seller":"alice","item":"sword","price":"50"}`, 400, CodeInvalidRequest},
		{"buy/buyer wrong type", "POST", "/api/purchases", `{"buyer":7,"seller":"alice","item":"sword","price":50}`, 400, CodeInvalidRequest},
		{"buy/missing price", "POST", "/api/purchases", `{"buyer":"carol","seller":"alice","item":"sword"}`, 400, CodeInvalidRequest},
		{"buy/missing buyer", "POST", "/api/purchases", `{"seller":"alice","item":"sword","price":50}`, 400, CodeInvalidRequest},
		{"buy/zero price", "POST", "/api/purchases", `{"buyer":"carol","seller":"alice","item":"sword","price":0}`, 400, CodeInvalidRequest},
		{"buy/negative price", "POST", "/api/purchases", `{"buyer":"carol","seller":"alice","item":"sword","price":-50}`, 400, CodeInvalidRequest},
		{"buy/huge price", "POST", "/api/purchases", `{"buyer":"carol","seller":"alice","item":"sword","price":99999999999999999999}`, 400, CodeInvalidRequest},
		{"buy/buyer with dot", "POST", "/api/purchases", `{"buyer":"ca.rol","seller":"alice","item":"sword","price":50}`, 400, CodeInvalidRequest},
		{"buy/item with dot", "POST", "/api/purchases", `{"buyer":"carol","seller":"alice","item":"sw.ord","price":50}`, 400, CodeInvalidRequest},
		{"buy/buyer of 65", "POST", "/api/purchases", `{"buyer":"` + long + `","seller":"alice","item":"sword","price":50}`, 400, CodeInvalidRequest},
		{"buy/from self", "POST", "/api/purchases", `{"buyer":"alice","seller":"alice","item":"sword","price":50}`, 400, CodeInvalidRequest},
		{"buy/unknown strategy", "POST", "/api/purchases?strategy=optimistic", `{"buyer":"carol","seller":"alice","item":"sword","price":50}`, 400, CodeInvalidRequest},
		{"buy/unknown buyer", "POST", "/api/purchases", `{"buyer":"nobody","seller":"alice","item":"sword","price":50}`, 404, CodeNotFound},
		{"buy/listing gone", "POST", "/api/purchases", `{"buyer":"carol","seller":"alice","item":"shield","price":50}`, 404, CodeListingNotFound},
		{"buy/wrong seller", "POST", "/api/purchases", `{"buyer":"carol","seller":"bob","item":"sword","price":50}`, 404, CodeListingNotFound},
		{"buy/price changed", "POST", "/api/purchases", `{"buyer":"carol","seller":"alice","item":"sword","price":49}`, 409, CodePriceChanged},
		{"buy/insufficient funds", "POST", "/api/purchases", `{"buyer":"bob","seller":"alice","item":"sword","price":50}`, 409, CodeInsufficientFunds},
		{"buy/1 MiB body", "POST", "/api/purchases", huge, 413, CodeRequestTooLarge},

		// /api/strategy
		{"strategy/unknown", "PUT", "/api/strategy", `{"strategy":"optimistic"}`, 400, CodeInvalidRequest},
		{"strategy/missing", "PUT", "/api/strategy", `{}`, 400, CodeInvalidRequest},
		{"strategy/wrong type", "PUT", "/api/strategy", `{"strategy":1}`, 400, CodeInvalidRequest},
		{"strategy/unknown field", "PUT", "/api/strategy", `{"strategy":"lua","for":"ever"}`, 400, CodeInvalidRequest},
		{"strategy/malformed", "PUT", "/api/strategy", `{"strategy":`, 400, CodeInvalidRequest},
		{"strategy/1 MiB body", "PUT", "/api/strategy", huge, 413, CodeRequestTooLarge},

		// echo's own errors
		{"no route", "GET", "/api/nothing", ``, 404, CodeNotFound},
		{"no file", "GET", "/static/nothing.js", ``, 404, CodeNotFound},
		{"wrong method", "DELETE", "/api/market", ``, 405, CodeMethodNotAllowed},
		{"wrong method on users", "PATCH", "/api/users/alice", `{}`, 405, CodeMethodNotAllowed},
	}
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		for _, chunked := range []bool{false, true} {
			f := newFixture(t, b)
			before := redistest.Snapshot(t, f.rdb)
			for _, tt := range tests {
				name := tt.name
				if chunked {
					name += "/chunked"
				}
				t.Run(name, func(t *testing.T) {
					req := httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.body))
					if tt.body != "" {
						req.Header.Set("Content-Type", "application/json")
					}
					if chunked {
						req.ContentLength = -1 // no Content-Length: the limit is met while reading
					}
					rec := httptest.NewRecorder()
					f.srv.Handler().ServeHTTP(rec, req)
					r := response{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
					if r.status != tt.status || r.code() != tt.code {
						t.Fatalf("%s %s: got %d %s, want %d %s", tt.method, tt.path, r.status, clip(string(r.body)), tt.status, tt.code)
					}
					if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
						t.Errorf("Content-Type %q, want JSON", ct)
					}
					var e errorBody
					r.decode(t, &e)
					if e.Error.Message == "" {
						t.Errorf("no message in %s", r.body)
					}
					if after := redistest.Snapshot(t, f.rdb); !maps.Equal(before, after) {
						t.Fatalf("market changed:\nbefore %v\nafter  %v", before, after)
					}
				})
			}
			if f.srv.Strategy() != market.Fine {
				t.Errorf("default strategy changed to %s", f.srv.Strategy())
			}
			audit(t, f.m)
		}
	})
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

// TestRoutes exercises the success case of every route on a fresh market.
func TestRoutes(t *testing.T) {
	t.Parallel() // servers of its own
	type check func(t *testing.T, f *fixture, r response)
	tests := []struct {
		name, method, path, body string
		status                   int
		check                    check
	}{
		{"create user", "POST", "/api/users", `{"id":"frank","name":"Frank","funds":43}`, 201,
			func(t *testing.T, f *fixture, r response) {
				var u market.User
				r.decode(t, &u)
				if u.ID != "frank" || u.Name != "Frank" || u.Funds != 43 || u.Inventory == nil || len(u.Inventory) != 0 {
					t.Errorf("user %+v", u)
				}
				if loc := r.header.Get("Location"); loc != "/api/users/frank" {
					t.Errorf("Location %q", loc)
				}
				if got, err := f.m.GetUser(context.Background(), "frank"); err != nil || got.Funds != 43 {
					t.Errorf("stored %+v %v", got, err)
				}
			}},
		{"create user with generated id", "POST", "/api/users", `{"name":"Zoë","funds":0}`, 201,
			func(t *testing.T, f *fixture, r response) {
				var u market.User
				r.decode(t, &u)
				if _, err := f.m.GetUser(context.Background(), u.ID); err != nil || u.Name != "Zoë" {
					t.Errorf("user %+v: %v", u, err)
				}
			}},
		{"list users", "GET", "/api/users?limit=2&offset=1", ``, 200,
			func(t *testing.T, f *fixture, r response) {
				var body struct {
					Users []market.User
					Total int
				}
				r.decode(t, &body)
				if body.Total != 3 || len(body.Users) != 2 || body.Users[0].ID != "bob" || body.Users[1].ID != "carol" {
					t.Errorf("users %+v", body)
				}
			}},
		{"get user", "GET", "/api/users/alice", ``, 200,
			func(t *testing.T, f *fixture, r response) {
				var u market.User
				r.decode(t, &u)
				if u.ID != "alice" || u.Funds != 100 || !slices.Equal(u.Inventory, []string{"shield"}) {
					t.Errorf("user %+v", u)
				}
			}},
		{"grant item", "POST", "/api/users/bob/inventory", `{"item":"bow"}`, 201,
			func(t *testing.T, f *fixture, r response) {
				u, _ := f.m.GetUser(context.Background(), "bob")
				if !slices.Equal(u.Inventory, []string{"bow"}) {
					t.Errorf("inventory %v", u.Inventory)
				}
			}},
		{"market", "GET", "/api/market", ``, 200,
			func(t *testing.T, f *fixture, r response) {
				var body struct {
					Listings []market.Listing
					Total    int
				}
				r.decode(t, &body)
				want := []market.Listing{{Item: "sword", Seller: "alice", Price: 50}}
				if body.Total != 1 || !slices.Equal(body.Listings, want) {
					t.Errorf("market %+v", body)
				}
			}},
		{"market past the end", "GET", "/api/market?offset=5&limit=500", ``, 200,
			func(t *testing.T, f *fixture, r response) {
				if string(r.body) != `{"listings":[],"total":1}`+"\n" {
					t.Errorf("market %s", r.body)
				}
			}},
		{"get strategy", "GET", "/api/strategy", ``, 200,
			func(t *testing.T, f *fixture, r response) {
				var s strategyResponse
				r.decode(t, &s)
				if s.Strategy != market.Fine || len(s.Strategies) != 4 {
					t.Errorf("strategy %+v", s)
				}
			}},
		{"put strategy", "PUT", "/api/strategy", `{"strategy":"lua"}`, 200,
			func(t *testing.T, f *fixture, r response) {
				var s strategyResponse
				r.decode(t, &s)
				if s.Strategy != market.Lua || f.srv.Strategy() != market.Lua {
					t.Errorf("strategy %+v, server %s", s, f.srv.Strategy())
				}
			}},
		{"audit", "GET", "/api/audit", ``, 200,
			func(t *testing.T, f *fixture, r response) {
				var body struct{ Total, Users, Items, Listings int }
				r.decode(t, &body)
				if body.Total != 0 || body.Users != 3 || body.Items != 2 || body.Listings != 1 {
					t.Errorf("audit %s", r.body)
				}
			}},
		{"info", "GET", "/api/info", ``, 200,
			func(t *testing.T, f *fixture, r response) {
				var body infoResponse
				r.decode(t, &body)
				if body.Market != "t" || body.Strategy != "fine" || len(body.Strategies) != 4 {
					t.Errorf("info %s", r.body)
				}
				if body.Machine.CPUs < 1 || body.Machine.GoVersion == "" || body.BodyLimitBytes != DefaultBodyLimit {
					t.Errorf("info: machine or body limit missing: %s", r.body)
				}
			}},
		{"healthz", "GET", "/healthz", ``, 200, nil},
		{"metrics", "GET", "/metrics", ``, 200,
			func(t *testing.T, f *fixture, r response) {
				for _, want := range []string{"lockmarket_redis_pool_connections", "lockmarket_redis_pool_hits_total", "go_goroutines"} {
					if !strings.Contains(string(r.body), want) {
						t.Errorf("no %s in /metrics", want)
					}
				}
			}},
		{"demo page", "GET", "/", ``, 200,
			func(t *testing.T, f *fixture, r response) {
				if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") || !strings.Contains(string(r.body), "/static/app.js") {
					t.Errorf("page %q: %s", ct, clip(string(r.body)))
				}
				if csp := r.header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
					t.Errorf("CSP %q", csp)
				}
			}},
		{"demo script", "GET", "/static/app.js", ``, 200,
			func(t *testing.T, f *fixture, r response) {
				if !strings.Contains(string(r.body), "/api/purchases") {
					t.Errorf("script: %s", clip(string(r.body)))
				}
			}},
	}
	// A listing and a purchase under each strategy, chosen per request.
	for _, st := range market.Strategies {
		tests = append(tests, struct {
			name, method, path, body string
			status                   int
			check                    check
		}{"list/" + string(st), "POST", "/api/listings?strategy=" + string(st), `{"seller":"alice","item":"shield","price":20}`, 201,
			func(t *testing.T, f *fixture, r response) {
				var l listingResponse
				r.decode(t, &l)
				if l.Item != "shield" || l.Seller != "alice" || l.Price != 20 || l.Strategy != st {
					t.Errorf("listing %s", r.body)
				}
				ls, total, _ := f.m.Listings(context.Background(), 0, 10)
				if total != 2 || ls[0] != (market.Listing{Item: "shield", Seller: "alice", Price: 20}) {
					t.Errorf("market %v", ls)
				}
			}}, struct {
			name, method, path, body string
			status                   int
			check                    check
		}{"buy/" + string(st), "POST", "/api/purchases?strategy=" + string(st), `{"buyer":"carol","seller":"alice","item":"sword","price":50}`, 200,
			func(t *testing.T, f *fixture, r response) {
				var p purchaseResponse
				r.decode(t, &p)
				if p.Strategy != st || p.Item != "sword" || p.Retries < 0 || p.WaitMS <= 0 {
					t.Errorf("purchase %s", r.body)
				}
				ctx := context.Background()
				carol, _ := f.m.GetUser(ctx, "carol")
				alice, _ := f.m.GetUser(ctx, "alice")
				if carol.Funds != 950 || alice.Funds != 150 || !slices.Equal(carol.Inventory, []string{"sword"}) {
					t.Errorf("after purchase: carol %+v, alice %+v", carol, alice)
				}
				if _, total, _ := f.m.Listings(ctx, 0, 10); total != 0 {
					t.Errorf("%d listings left", total)
				}
			}})
	}
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				f := newFixture(t, b)
				r := serve(f.srv.Handler(), tt.method, tt.path, tt.body)
				if r.status != tt.status {
					t.Fatalf("%s %s: %d %s, want %d", tt.method, tt.path, r.status, clip(string(r.body)), tt.status)
				}
				if tt.check != nil {
					tt.check(t, f, r)
				}
				audit(t, f.m)
			})
		}
	})
}

// TestDefaultStrategy checks that PUT /api/strategy changes the strategy
// purchases use when the request names none.
func TestDefaultStrategy(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		h := f.srv.Handler()
		if r := serve(h, "PUT", "/api/strategy", `{"strategy":"watch"}`); r.status != http.StatusOK {
			t.Fatalf("put: %d %s", r.status, r.body)
		}
		r := serve(h, "POST", "/api/purchases", `{"buyer":"carol","seller":"alice","item":"sword","price":50}`)
		var p purchaseResponse
		r.decode(t, &p)
		if r.status != http.StatusOK || p.Strategy != market.Watch {
			t.Fatalf("purchase: %d %s", r.status, r.body)
		}
		m := serve(h, "GET", "/metrics", "")
		if want := `lockmarket_purchases_total{outcome="ok",strategy="watch"} 1`; !strings.Contains(string(m.body), want) {
			t.Errorf("no %q in metrics", want)
		}
	})
}

// TestNewRefusesTakenRegistry: a registry that already holds some of the
// service's collectors makes New fail with an error, not a panic, and
// leaves the registry as it was.
func TestNewRefusesTakenRegistry(t *testing.T) {
	b := redistest.Mini(t)
	m, err := market.New(b.Client, "t")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		fill func(t *testing.T, reg *prometheus.Registry)
	}{
		{"another server", func(t *testing.T, reg *prometheus.Registry) {
			if _, err := New(Config{Market: m, Registry: reg}); err != nil {
				t.Fatal(err)
			}
		}},
		// Registered after the service's own metrics: those are taken
		// back when it fails.
		{"a go collector", func(t *testing.T, reg *prometheus.Registry) {
			reg.MustRegister(collectors.NewGoCollector())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			tc.fill(t, reg)
			before := families(t, reg)
			srv, err := New(Config{Market: m, Registry: reg})
			if err == nil || srv != nil {
				t.Fatalf("New: %v, %v; want an error", srv, err)
			}
			if !strings.Contains(err.Error(), "register metrics") {
				t.Errorf("error %q does not say what failed", err)
			}
			if after := families(t, reg); !slices.Equal(after, before) {
				t.Errorf("metric families after the failed New:\n%v\nbefore:\n%v", after, before)
			}
		})
	}
}

// families lists the names of the metric families reg gathers.
func families(t *testing.T, reg *prometheus.Registry) []string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	return names
}
