package httpapi

import (
	"context"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market"
)

// request sends one request straight to the handler under ctx, with extra
// headers given as name, value pairs (a name may repeat).
func request(ctx context.Context, h http.Handler, method, path, body string, header ...string) response {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequestWithContext(ctx, method, path, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return response{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

// withKey is the header list of an Idempotency-Key.
func withKey(key string) []string { return []string{HeaderIdempotencyKey, key} }

// TestIdempotencyKey checks the Idempotency-Key of purchases and listings
// under each strategy: a repeat answers like the first request, with
// "replayed": true, and changes nothing; the same key with another body,
// or on the other route, is 422 idempotency_mismatch and changes nothing.
func TestIdempotencyKey(t *testing.T) {
	t.Parallel() // servers of its own
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		for _, st := range market.Strategies {
			t.Run(string(st), func(t *testing.T) {
				f := newFixture(t, b)
				h := f.srv.Handler()
				ctx := context.Background()
				buy := `{"buyer":"carol","seller":"alice","item":"sword","price":50}`
				buyPath := "/api/purchases?strategy=" + string(st)

				first := request(ctx, h, "POST", buyPath, buy, withKey("buy-1")...)
				var p1 purchaseResponse
				first.decode(t, &p1)
				if first.status != http.StatusOK || p1.Replayed || strings.Contains(string(first.body), "replayed") {
					t.Fatalf("first purchase: %d %s", first.status, first.body)
				}
				applied := redistest.Snapshot(t, f.rdb)
				other := market.Lua
				if st == market.Lua {
					other = market.Watch
				}
				// Repeats, under the same strategy or another, answer
				// like the first and apply nothing.
				for _, path := range []string{buyPath, buyPath, "/api/purchases?strategy=" + string(other)} {
					r := request(ctx, h, "POST", path, buy, withKey("buy-1")...)
					var p purchaseResponse
					r.decode(t, &p)
					if r.status != http.StatusOK || !p.Replayed ||
						p.Buyer != p1.Buyer || p.Seller != p1.Seller || p.Item != p1.Item || p.Price != p1.Price {
						t.Fatalf("repeat %s: %d %s; want 200 with the first answer's purchase and \"replayed\":true", path, r.status, r.body)
					}
					if now := redistest.Snapshot(t, f.rdb); !maps.Equal(applied, now) {
						t.Fatalf("repeat %s changed the market", path)
					}
				}
				// The same key for another operation applies nothing.
				mismatches := []struct{ path, body string }{
					{buyPath, `{"buyer":"carol","seller":"alice","item":"sword","price":49}`},
					{buyPath, `{"buyer":"bob","seller":"alice","item":"sword","price":50}`},
					{"/api/listings?strategy=" + string(st), `{"seller":"alice","item":"shield","price":20}`},
				}
				for _, mm := range mismatches {
					r := request(ctx, h, "POST", mm.path, mm.body, withKey("buy-1")...)
					if r.status != http.StatusUnprocessableEntity || r.code() != CodeIdempotencyMismatch {
						t.Fatalf("%s %s with a used key: %d %s; want 422 %s", mm.path, mm.body, r.status, r.body, CodeIdempotencyMismatch)
					}
					if now := redistest.Snapshot(t, f.rdb); !maps.Equal(applied, now) {
						t.Fatalf("%s %s with a used key changed the market", mm.path, mm.body)
					}
				}

				// Listings alike: 201 twice, applied once.
				listPath := "/api/listings?strategy=" + string(st)
				list := `{"seller":"alice","item":"shield","price":20}`
				l1 := request(ctx, h, "POST", listPath, list, withKey("list-1")...)
				var first1 listingResponse
				l1.decode(t, &first1)
				if l1.status != http.StatusCreated || first1.Replayed {
					t.Fatalf("first listing: %d %s", l1.status, l1.body)
				}
				listed := redistest.Snapshot(t, f.rdb)
				l2 := request(ctx, h, "POST", listPath, list, withKey("list-1")...)
				var again listingResponse
				l2.decode(t, &again)
				if l2.status != http.StatusCreated || !again.Replayed || again.Listing != first1.Listing {
					t.Fatalf("repeated listing: %d %s; want 201 with the first answer's listing and \"replayed\":true", l2.status, l2.body)
				}
				if r := request(ctx, h, "POST", listPath, `{"seller":"alice","item":"shield","price":21}`, withKey("list-1")...); r.status != http.StatusUnprocessableEntity || r.code() != CodeIdempotencyMismatch {
					t.Fatalf("listing at another price with a used key: %d %s", r.status, r.body)
				}
				if now := redistest.Snapshot(t, f.rdb); !maps.Equal(listed, now) {
					t.Fatal("a repeated listing changed the market")
				}

				metrics := string(serve(h, "GET", "/metrics", "").body)
				for _, want := range []string{
					`lockmarket_purchases_total{outcome="ok",strategy="` + string(st) + `"} 1`,
					`lockmarket_purchases_total{outcome="replayed",strategy="` + string(st) + `"} 2`,
					`lockmarket_purchases_total{outcome="replayed",strategy="` + string(other) + `"} 1`,
					`lockmarket_purchases_total{outcome="idempotency_mismatch",strategy="` + string(st) + `"} 2`,
					`lockmarket_listings_total{outcome="replayed",strategy="` + string(st) + `"} 1`,
				} {
					if !containsLine(metrics, want) {
						t.Errorf("no %q in metrics", want)
					}
				}
				carol, _ := f.m.GetUser(ctx, "carol")
				if carol.Funds != 950 || !slices.Equal(carol.Inventory, []string{"sword"}) {
					t.Errorf("carol %+v; want one purchase applied", carol)
				}
				audit(t, f.m)
			})
		}
	})
}

// TestIdempotencyKeyRefused sends keys that are not operation IDs: 400
// invalid_request, nothing changed.
func TestIdempotencyKeyRefused(t *testing.T) {
	keys := []struct {
		name   string
		header []string
	}{
		{"dot", withKey("a.b")},
		{"65 characters", withKey(strings.Repeat("k", 65))},
		{"empty", withKey("")},
		{"space", withKey("a b")},
		{"not ASCII", withKey("clé")},
		{"twice", append(withKey("a"), withKey("b")...)},
	}
	routes := []struct{ path, body string }{
		{"/api/purchases", `{"buyer":"carol","seller":"alice","item":"sword","price":50}`},
		{"/api/listings", `{"seller":"alice","item":"shield","price":20}`},
	}
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		before := redistest.Snapshot(t, f.rdb)
		for _, rt := range routes {
			for _, k := range keys {
				t.Run(rt.path+"/"+k.name, func(t *testing.T) {
					r := request(context.Background(), f.srv.Handler(), "POST", rt.path, rt.body, k.header...)
					if r.status != http.StatusBadRequest || r.code() != CodeInvalidRequest || !strings.Contains(string(r.body), HeaderIdempotencyKey) {
						t.Fatalf("%d %s; want 400 %s naming the header", r.status, r.body, CodeInvalidRequest)
					}
					if after := redistest.Snapshot(t, f.rdb); !maps.Equal(before, after) {
						t.Fatal("market changed")
					}
				})
			}
		}
	})
}

// TestReceipts checks GET /api/users/:id/purchases: the sales a user took
// part in, as buyer or seller, newest first, with the Idempotency-Key of
// each; and its refusals.
func TestReceipts(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		h := f.srv.Handler()
		ctx := context.Background()
		if r := request(ctx, h, "POST", "/api/purchases", `{"buyer":"carol","seller":"alice","item":"sword","price":50}`, withKey("carol-sword")...); r.status != http.StatusOK {
			t.Fatalf("purchase: %d %s", r.status, r.body)
		}
		if r := serve(h, "POST", "/api/listings", `{"seller":"alice","item":"shield","price":20}`); r.status != http.StatusCreated {
			t.Fatalf("listing: %d %s", r.status, r.body)
		}
		if r := serve(h, "POST", "/api/purchases?strategy=lua", `{"buyer":"bob","seller":"alice","item":"shield","price":20}`); r.status != http.StatusOK {
			t.Fatalf("purchase: %d %s", r.status, r.body)
		}
		if _, err := f.m.CreateUser(ctx, "dave", "Dave", 5); err != nil {
			t.Fatal(err)
		}
		sword := market.Receipt{Buyer: "carol", Seller: "alice", Item: "sword", Price: 50, Op: "carol-sword"}
		shield := market.Receipt{Buyer: "bob", Seller: "alice", Item: "shield", Price: 20}
		tests := []struct {
			path string
			want []market.Receipt
		}{
			{"/api/users/carol/purchases", []market.Receipt{sword}},
			{"/api/users/bob/purchases", []market.Receipt{shield}},
			{"/api/users/alice/purchases", []market.Receipt{shield, sword}},
			{"/api/users/alice/purchases?limit=1", []market.Receipt{shield}},
			{"/api/users/alice/purchases?limit=1000", []market.Receipt{shield, sword}},
			{"/api/users/dave/purchases", []market.Receipt{}},
		}
		for _, tt := range tests {
			r := serve(h, "GET", tt.path, "")
			var body struct{ Receipts []market.Receipt }
			r.decode(t, &body)
			if r.status != http.StatusOK || body.Receipts == nil {
				t.Fatalf("%s: %d %s", tt.path, r.status, r.body)
			}
			got := make([]market.Receipt, len(body.Receipts))
			for i, rc := range body.Receipts {
				if rc.ID == "" {
					t.Errorf("%s: receipt without an ID: %s", tt.path, r.body)
				}
				rc.ID = ""
				got[i] = rc
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("%s: %s; want %+v", tt.path, r.body, tt.want)
			}
		}
		if r := serve(h, "GET", "/api/users/dave/purchases", ""); string(r.body) != `{"receipts":[]}`+"\n" {
			t.Errorf("no receipts: %s", r.body)
		}

		refused := []struct {
			path   string
			status int
			code   string
		}{
			{"/api/users/nobody/purchases", 404, CodeNotFound},
			{"/api/users/al.ice/purchases", 400, CodeInvalidRequest},
			{"/api/users/" + strings.Repeat("a", 65) + "/purchases", 400, CodeInvalidRequest},
			{"/api/users/alice/purchases?limit=0", 400, CodeInvalidRequest},
			{"/api/users/alice/purchases?limit=1001", 400, CodeInvalidRequest},
			{"/api/users/alice/purchases?limit=-1", 400, CodeInvalidRequest},
			{"/api/users/alice/purchases?limit=ten", 400, CodeInvalidRequest},
		}
		for _, tt := range refused {
			if r := serve(h, "GET", tt.path, ""); r.status != tt.status || r.code() != tt.code {
				t.Errorf("%s: %d %s; want %d %s", tt.path, r.status, r.body, tt.status, tt.code)
			}
		}
		if r := serve(h, "POST", "/api/users/alice/purchases", "{}"); r.status != http.StatusMethodNotAllowed {
			t.Errorf("POST receipts: %d %s", r.status, r.body)
		}
	})
}
