package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lockmarket/lockmarket/internal/redis/redisconn"
	"github.com/lockmarket/lockmarket/internal/service/httpapi"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market"
	"github.com/lockmarket/lockmarket/market/markettrace"
)

// TestServiceFencesStalledBuyer stalls a buyer of the service's market
// under the default strategy (fine) just before her commit, lets her lease
// run out, and has another buyer take the lock and buy the same listing
// meanwhile. The stalled commit must be refused (503 lock_lost, nothing
// applied), so the item is sold once and the audit is clean. Without
// fencing the stalled commit lands too, and the item is sold twice.
func TestServiceFencesStalledBuyer(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c, err := parseConfig([]string{"-name", "fence"}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		srv, err := newService(ctx, c, &redisconn.Conn{Client: b.Client, Mode: redisconn.ModeURL}, log)
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		if c.strategy != market.Fine {
			t.Fatalf("default strategy %s, want fine", c.strategy)
		}
		m, h := srv.Market(), srv.Handler()
		for _, u := range []struct {
			id    string
			funds int64
		}{{"sam", 0}, {"alice", 100}, {"bob", 100}} {
			if _, err := m.CreateUser(ctx, u.id, u.id, u.funds); err != nil {
				t.Fatal(err)
			}
		}
		if err := m.GrantItem(ctx, "sam", "sword"); err != nil {
			t.Fatal(err)
		}
		if _, err := m.List(ctx, market.Fine, "sam", "sword", 10); err != nil {
			t.Fatal(err)
		}
		buy := `{"buyer":"%s","seller":"sam","item":"sword","price":10}`
		bobStatus := 0
		stalled := false
		hook := func(context.Context, string, string) {
			if stalled {
				return
			}
			stalled = true // alice stalls here, past her lease
			b.Expire(t, markettrace.KeysOf(m).ItemLock("sword", "sam"))
			bobStatus, _ = purchaseVia(context.Background(), h, strings.Replace(buy, "%s", "bob", 1))
		}
		actx := markettrace.WithTrace(ctx, &markettrace.Trace{BeforeCommit: hook})
		status, body := purchaseVia(actx, h, strings.Replace(buy, "%s", "alice", 1))
		if !stalled || bobStatus != http.StatusOK {
			t.Fatalf("stalled %v, bob's purchase %d: want a stall and bob's 200", stalled, bobStatus)
		}
		var e struct {
			Error struct{ Code string } `json:"error"`
		}
		_ = json.Unmarshal(body, &e)
		if status != http.StatusServiceUnavailable || e.Error.Code != httpapi.CodeLockLost {
			t.Errorf("alice's stalled purchase: %d %s, want 503 %s", status, body, httpapi.CodeLockLost)
		}
		rep, err := m.Audit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Total() != 0 {
			t.Errorf("audit: %d violations: %v", rep.Total(), rep.Details)
		}
		alice, err := m.GetUser(ctx, "alice")
		if err != nil {
			t.Fatal(err)
		}
		if alice.Funds != 100 || len(alice.Inventory) != 0 {
			t.Errorf("alice: funds %d, inventory %v; want 100 and nothing (her write refused)",
				alice.Funds, alice.Inventory)
		}
	})
}

// purchaseVia sends one purchase to h with ctx and returns its status and body.
func purchaseVia(ctx context.Context, h http.Handler, body string) (int, []byte) {
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1/api/purchases",
		strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.Bytes()
}
