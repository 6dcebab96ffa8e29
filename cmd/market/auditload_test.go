package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/redis/redisserver"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market"
)

// TestAuditCost measures what clients looping on GET /api/audit cost the
// service's purchases, in one run of the whole service (run) on a private
// redis-server. Traders trade as fast as they can throughout: each has two
// users and an item that goes back and forth between them (the holder
// lists it at 1, the other buys it), so the market keeps its size while
// receipts pile up. Phases without (A) and with (B) two audit clients
// alternate as A B B A A B B A ..., so that both see the same machine and
// about the same market, and a drift in speed over the run (the machine
// is shared; receipts pile up) weighs on both alike. The audit clients
// loop on GET /api/audit, waiting as long as Retry-After says after a 429.
// The test logs purchases per second of each phase and the ratio of the
// means (B / A); it checks that no request failed, that audits ran, and
// that every audit was clean (a phase with audit clients lasts until one
// audit has answered, however slow the machine). Speed is reported, not
// judged. The
// environment sets the run:
//
//	LOCKMARKET_AUDIT_PHASE=5s LOCKMARKET_AUDIT_PAIRS=3 LOCKMARKET_AUDIT_TRADERS=32 \
//	  LOCKMARKET_AUDIT_STRATEGY=fine go test -run 'TestAuditCost$' -v -count=1 ./cmd/market/
//
// LOCKMARKET_AUDIT_TIGHT=1 makes the audit clients ignore Retry-After and
// ask again at once; LOCKMARKET_AUDIT_CLIENTS sets their number (0 for a
// run whose phases differ in name only, to see the noise of the machine).
func TestAuditCost(t *testing.T) {
	redistest.SkipShort(t, redistest.NeedServer)
	phase := loadEnvDuration(t, "LOCKMARKET_AUDIT_PHASE", 400*time.Millisecond)
	pairs := loadEnvInt(t, "LOCKMARKET_AUDIT_PAIRS", 1, 100)
	traders := loadEnvInt(t, "LOCKMARKET_AUDIT_TRADERS", 16, 1000)
	strategy := os.Getenv("LOCKMARKET_AUDIT_STRATEGY")
	if strategy == "" {
		strategy = string(market.Fine)
	}
	tight := os.Getenv("LOCKMARKET_AUDIT_TIGHT") == "1"
	auditClients := 2
	if v := os.Getenv("LOCKMARKET_AUDIT_CLIENTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 100 {
			t.Fatalf("LOCKMARKET_AUDIT_CLIENTS=%q: want 0..100", v)
		}
		auditClients = n
	}

	b := redistest.Real(t)
	ctx := context.Background()
	const name = "auditload"
	m, err := market.New(b.Client, name)
	if err != nil {
		t.Fatal(err)
	}
	// Trader i: users a<i> and b<i>, and item t<i>, which a<i> holds.
	const funds = 1_000_000
	for i := range traders {
		for _, u := range []string{fmt.Sprintf("a%d", i), fmt.Sprintf("b%d", i)} {
			if _, err := m.CreateUser(ctx, u, "Trader", funds); err != nil {
				t.Fatal(err)
			}
		}
		if err := m.GrantItem(ctx, fmt.Sprintf("a%d", i), fmt.Sprintf("t%d", i)); err != nil {
			t.Fatal(err)
		}
	}

	port, err := redisserver.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	sctx, stop := context.WithCancel(ctx)
	logs := &loadLog{max: 64 << 10}
	done := make(chan error, 1)
	go func() {
		done <- run(sctx, []string{"-addr", addr, "-redis", b.Addr(), "-strategy", strategy, "-name", name}, io.Discard, logs)
	}()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("service: %v; log: %s", err, logs.String())
		}
	}()
	base := "http://" + addr
	hc := &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{MaxIdleConns: traders + 4, MaxIdleConnsPerHost: traders + 4},
	}
	defer hc.CloseIdleConnections()
	waitHealth(t, hc, base, http.StatusOK, done)

	nPhases := 2 * pairs
	var (
		cur       atomic.Int64 // phase index; nPhases when over
		bought    = make([]atomic.Int64, nPhases+1)
		audits    = make([]atomic.Int64, nPhases+1)
		auditTime = make([]atomic.Int64, nPhases+1) // ns spent in audits answered 200
		busy      = make([]atomic.Int64, nPhases+1)
		failMu    sync.Mutex
		failures  []string
		auditOn   = make(chan struct{}) // closed at the end; audit phases signal below
		phaseGate sync.Mutex
		auditing  = false
		auditWake = sync.NewCond(&phaseGate)
	)
	fail := func(format string, args ...any) {
		failMu.Lock()
		defer failMu.Unlock()
		if len(failures) < 10 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
	}
	over := func() bool { return cur.Load() >= int64(nPhases) }

	var wg sync.WaitGroup
	for i := range traders {
		wg.Go(func() {
			holder, other, item := fmt.Sprintf("a%d", i), fmt.Sprintf("b%d", i), fmt.Sprintf("t%d", i)
			for !over() {
				status, resp, err := post(hc, base+"/api/listings",
					fmt.Sprintf(`{"seller":%q,"item":%q,"price":1}`, holder, item))
				if err != nil || status != http.StatusCreated {
					fail("listing: %d %s %v", status, resp, err)
					return
				}
				status, resp, err = post(hc, base+"/api/purchases",
					fmt.Sprintf(`{"buyer":%q,"seller":%q,"item":%q,"price":1}`, other, holder, item))
				if err != nil || status != http.StatusOK {
					fail("purchase: %d %s %v", status, resp, err)
					return
				}
				bought[cur.Load()].Add(1)
				holder, other = other, holder
			}
		})
	}
	for range auditClients {
		wg.Go(func() {
			for {
				phaseGate.Lock()
				for !auditing && !over() {
					auditWake.Wait()
				}
				phaseGate.Unlock()
				if over() {
					return
				}
				sent := time.Now()
				resp, err := hc.Get(base + "/api/audit")
				if err != nil {
					fail("audit: %v", err)
					continue
				}
				data, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				p := cur.Load()
				switch resp.StatusCode {
				case http.StatusOK:
					var a struct{ Total int }
					if err := json.Unmarshal(data, &a); err != nil || a.Total != 0 {
						fail("audit: %s", data)
					}
					audits[p].Add(1)
					auditTime[p].Add(int64(time.Since(sent)))
				case http.StatusTooManyRequests:
					busy[p].Add(1)
					if !tight {
						secs, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
						select {
						case <-time.After(time.Duration(max(secs, 1)) * time.Second):
						case <-auditOn:
						}
					}
				default:
					fail("audit: %d %s", resp.StatusCode, data)
				}
			}
		})
	}

	// Phases 1, 2, 5, 6, 9, 10 ... run with audit clients.
	withAudits := func(p int) bool { return p%4 == 1 || p%4 == 2 }
	// A phase lasts its time; one with audit clients lasts until an audit
	// has answered too (at most a minute), so that a busy machine, which
	// only slows the audits, cannot leave a phase without one.
	took := make([]time.Duration, nPhases)
	for p := range nPhases {
		phaseGate.Lock()
		auditing = withAudits(p)
		auditWake.Broadcast()
		phaseGate.Unlock()
		begin := time.Now()
		time.Sleep(phase)
		for withAudits(p) && auditClients > 0 && audits[p].Load() == 0 && time.Since(begin) < time.Minute {
			time.Sleep(10 * time.Millisecond)
		}
		took[p] = time.Since(begin)
		cur.Store(int64(p + 1))
	}
	phaseGate.Lock()
	auditWake.Broadcast()
	phaseGate.Unlock()
	close(auditOn)
	wg.Wait()

	var with, without float64
	var nAudits int64
	var sb strings.Builder
	for p := range nPhases {
		rate := float64(bought[p].Load()) / took[p].Seconds()
		nAudits += audits[p].Load()
		kind := "without"
		if withAudits(p) {
			kind = "with"
			with += rate
		} else {
			without += rate
		}
		fmt.Fprintf(&sb, "\n  phase %d %-7s audit clients: %7.0f purchases/s, %d audits (%.0f ms in all), %d audit_busy",
			p, kind, rate, audits[p].Load(), float64(auditTime[p].Load())/1e6, busy[p].Load())
	}
	t.Logf("audit cost: strategy=%s traders=%d audit_clients=%d phase=%v pairs=%d tight=%v%s\n  audits %d; ratio with/without = %.3f",
		strategy, traders, auditClients, phase, pairs, tight, sb.String(), nAudits, with/without)
	if auditClients > 0 && nAudits == 0 {
		t.Error("no audit completed")
	}
	for _, f := range failures {
		t.Error(f)
	}
	rep, err := m.Audit(ctx)
	if err != nil || rep.Total() != 0 {
		t.Errorf("final audit: %+v %v %v", rep.Violations, rep.Details, err)
	}
}

// post sends a JSON body and returns the status and the answer.
func post(hc *http.Client, url, body string) (int, []byte, error) {
	resp, err := hc.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}
