package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/lockmarket/lockmarket/internal/service/httpapi"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market"
)

// The fuzz targets send arbitrary request bodies and queries to the
// service's handler (no network) over a small market on miniredis, rebuilt
// for every input: seller s1 (no funds) owns it1, listed at 10, and it2,
// not listed; buyer b1 has 100. Whatever the input, the answer is never a
// 5xx, every error has the JSON error shape, a success happens only for a
// request that can succeed, and the market audits clean afterwards.

// fuzzMarket builds the small market and a handler serving it.
func fuzzMarket(t *testing.T, b *redistest.Backend) (http.Handler, *market.Market) {
	t.Helper()
	ctx := context.Background()
	b.Mini.FlushAll()
	m, err := market.New(b.Client, "fz")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.CreateUser(ctx, "s1", "Seller", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := m.CreateUser(ctx, "b1", "Buyer", 100); err != nil {
		t.Fatal(err)
	}
	for _, it := range []string{"it1", "it2"} {
		if err := m.GrantItem(ctx, "s1", it); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.List(ctx, market.Lua, "s1", "it1", 10); err != nil {
		t.Fatal(err)
	}
	srv, err := httpapi.New(httpapi.Config{Market: m, Strategy: market.Fine})
	if err != nil {
		t.Fatal(err)
	}
	return srv.Handler(), m
}

// fuzzDo serves one request and checks the answer's shape; it returns the
// status and body.
func fuzzDo(t *testing.T, h http.Handler, method, target, body string) (int, []byte) {
	t.Helper()
	req := httptest.NewRequest(method, "http://127.0.0.1"+target, strings.NewReader(body))
	return fuzzServe(t, h, req, body)
}

// fuzzDoQuery serves GET path with a raw query string, whatever bytes it
// holds (the handler, not the HTTP parser, is under test).
func fuzzDoQuery(t *testing.T, h http.Handler, path, query string) (int, []byte) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+path, nil)
	req.URL.RawQuery = query
	return fuzzServe(t, h, req, "")
}

func fuzzServe(t *testing.T, h http.Handler, req *http.Request, body string) (int, []byte) {
	t.Helper()
	method, target := req.Method, req.URL.String()
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	status, data := rec.Code, rec.Body.Bytes()
	if status >= 500 {
		t.Fatalf("%s %s %q: %d %s", method, target, body, status, data)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("%s %s %q: Content-Type %q", method, target, body, ct)
	}
	if status >= 400 {
		var eb struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(data, &eb); err != nil || eb.Error.Code == "" || eb.Error.Message == "" {
			t.Fatalf("%s %s %q: %d with a body not in the error shape: %s", method, target, body, status, data)
		}
	}
	return status, data
}

// fuzzAudit fails unless the market audits clean.
func fuzzAudit(t *testing.T, m *market.Market) {
	t.Helper()
	rep, err := m.Audit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Total() != 0 {
		t.Fatalf("audit: %+v %q", rep.Violations, rep.Details)
	}
}

var bodySeeds = []string{
	``, `{}`, `null`, `[]`, `"x"`, `1`, `{"buyer":"b1"}`, `{"buyer":1}`, `{"a":1}{"b":2}`, `{"buyer":"b1"} x`,
	`{"price":1e400}`, `{"price":-0}`, `{"price":9223372036854775808}`, `{"price":1.5}`, `{"price":"10"}`,
	`{"buyer":"b1","buyer":"s1"}`, `{"buyer":"\u0000"}`, `{"buyer":"b\ud800"}`, `{` + strings.Repeat(`"a":{`, 50),
	`{"buyer":null,"seller":null,"item":null,"price":null}`, "\xef\xbb\xbf{}", `{"BUYER":"b1"}`,
}

func FuzzDecodePurchase(f *testing.F) {
	f.Add(`{"buyer":"b1","seller":"s1","item":"it1","price":10}`, "")
	f.Add(`{"buyer":"b1","seller":"s1","item":"it1","price":10}`, "lua")
	f.Add(`{"buyer":"b1","seller":"s1","item":"it1","price":11}`, "watch")
	f.Add(`{"buyer":"s1","seller":"s1","item":"it1","price":10}`, "coarse")
	f.Add(`{"buyer":"b1","seller":"s1","item":"it2","price":10}`, "fine")
	f.Add(`{"buyer":"b1","seller":"s1","item":"it1.s1","price":10}`, "fine")
	f.Add(`{"buyer":"b1","seller":"s1","item":"it1","price":10,"extra":1}`, "")
	f.Add(`{"buyer":"b1","seller":"s1","item":"it1","price":10}`, "optimistic")
	for _, s := range bodySeeds {
		f.Add(s, "")
	}
	b := redistest.Mini(f)
	f.Fuzz(func(t *testing.T, body, strategy string) {
		h, m := fuzzMarket(t, b)
		target := "/api/purchases"
		if strategy != "" {
			target += "?strategy=" + url.QueryEscape(strategy)
		}
		status, data := fuzzDo(t, h, http.MethodPost, target, body)
		if status == http.StatusOK {
			var got struct {
				Buyer, Seller, Item string
				Price               int64
			}
			if err := json.Unmarshal(data, &got); err != nil {
				t.Fatal(err)
			}
			if got.Buyer != "b1" || got.Seller != "s1" || got.Item != "it1" || got.Price != 10 {
				t.Fatalf("purchase %q succeeded as %+v; only b1 buying it1 from s1 at 10 can", body, got)
			}
		}
		fuzzAudit(t, m)
	})
}

func FuzzDecodeListing(f *testing.F) {
	f.Add(`{"seller":"s1","item":"it2","price":5}`)
	f.Add(`{"seller":"s1","item":"it1","price":5}`)
	f.Add(`{"seller":"b1","item":"it2","price":5}`)
	f.Add(`{"seller":"s1","item":"it2","price":0}`)
	f.Add(`{"seller":"s1","item":"it2","price":1000000000001}`)
	f.Add(`{"seller":"s1","item":"it 2","price":5}`)
	for _, s := range bodySeeds {
		f.Add(s)
	}
	b := redistest.Mini(f)
	f.Fuzz(func(t *testing.T, body string) {
		h, m := fuzzMarket(t, b)
		status, data := fuzzDo(t, h, http.MethodPost, "/api/listings", body)
		if status == http.StatusCreated {
			var got market.Listing
			if err := json.Unmarshal(data, &got); err != nil {
				t.Fatal(err)
			}
			if got.Seller != "s1" || got.Item != "it2" || market.ValidPrice(got.Price) != nil {
				t.Fatalf("listing %q succeeded as %+v; only s1 listing it2 at a valid price can", body, got)
			}
		}
		fuzzAudit(t, m)
	})
}

func FuzzDecodeUser(f *testing.F) {
	f.Add(`{"name":"Frank","funds":43}`)
	f.Add(`{"id":"frank","name":"Frank","funds":43}`)
	f.Add(`{"id":"b1","name":"Again","funds":1}`)
	f.Add(`{"id":"a.b","name":"Dot","funds":1}`)
	f.Add(`{"name":"","funds":1}`)
	f.Add(`{"name":"Tab\t","funds":1}`)
	f.Add(`{"name":"Rich","funds":1000000000001}`)
	f.Add(`{"name":"Debt","funds":-1}`)
	for _, s := range bodySeeds {
		f.Add(s)
	}
	b := redistest.Mini(f)
	f.Fuzz(func(t *testing.T, body string) {
		h, m := fuzzMarket(t, b)
		status, data := fuzzDo(t, h, http.MethodPost, "/api/users", body)
		if status == http.StatusCreated {
			var got market.User
			if err := json.Unmarshal(data, &got); err != nil {
				t.Fatal(err)
			}
			if market.ValidID("user", got.ID) != nil || market.ValidName(got.Name) != nil || market.ValidFunds(got.Funds) != nil {
				t.Fatalf("user %q created as %+v", body, got)
			}
			u, err := m.GetUser(context.Background(), got.ID)
			if err != nil || u.Funds != got.Funds || u.Name != got.Name {
				t.Fatalf("user %q answered %+v, stored %+v (%v)", body, got, u, err)
			}
		}
		fuzzAudit(t, m)
	})
}

func FuzzMarketQuery(f *testing.F) {
	for _, q := range []string{"", "offset=0&limit=50", "limit=0", "limit=-1", "offset=-5", "limit=1000000",
		"offset=99999999999999999999", "limit=1e3", "limit=%zz", "offset=1&offset=2", "limit= 5"} {
		f.Add(q)
	}
	b := redistest.Mini(f)
	f.Fuzz(func(t *testing.T, query string) {
		h, _ := fuzzMarket(t, b)
		status, data := fuzzDoQuery(t, h, "/api/market", query)
		if status != http.StatusOK && status != http.StatusBadRequest {
			t.Fatalf("GET /api/market?%s: %d %s; want 200 or 400", query, status, data)
		}
	})
}
