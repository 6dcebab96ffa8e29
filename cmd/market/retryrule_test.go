package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/redis/redisserver"
	"github.com/lockmarket/lockmarket/internal/service/httpapi"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market/markettrace"
)

// answer is one attempt's answer: its status (0: no answer) and error code.
type answer struct {
	status int
	code   string
}

// keyedOp is one keyed listing or purchase and every answer its attempts
// got, the last one settling it.
type keyedOp struct {
	key, path string
	body      map[string]any
	answers   []answer
}

// openAnswer reports whether an answer leaves the attempt's outcome open.
func (a answer) open() bool {
	return a.status == 0 || a.code == httpapi.CodeOutcomeUnknown || a.code == httpapi.CodeRedisError
}

// TestRetryRuleUnderRedisKill drives keyed listings and purchases through
// the service while redis-server is killed (kill -9, an fsync-always
// append-only file) and restarted. Each client follows the documented
// retry rule: it sends an operation again with the same Idempotency-Key,
// after every 503 or missing answer, until an answer that is not a 503.
// Then no operation acknowledged is lost, none applied twice, and none is
// settled by a refusal (a 4xx) although it had applied. It also counts
// what the earlier rule ("retry until an answer that is not
// outcome_unknown") would have done: stop at a 503 that says "not applied"
// for an operation that an earlier attempt had applied.
func TestRetryRuleUnderRedisKill(t *testing.T) {
	redistest.SkipShort(t, redistest.NeedServer)
	redistest.RequireServer(t)
	b := redistest.Real(t, "--appendonly", "yes", "--appendfsync", "always")
	port, err := redisserver.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	const name = "retry"
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	logs := &loadLog{max: 64 << 10}
	go func() { done <- run(ctx, []string{"-addr", addr, "-redis", b.Addr(), "-name", name}, io.Discard, logs) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("service: %v; log: %s", err, logs.String())
		}
	}()
	base := "http://" + addr
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	waitHealth(t, hc, base, http.StatusOK, done)

	send := func(path, key string, body map[string]any) answer {
		data, _ := json.Marshal(body)
		req, _ := http.NewRequest("POST", base+path, bytes.NewReader(data))
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set(httpapi.HeaderIdempotencyKey, key)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return answer{}
		}
		defer resp.Body.Close()
		var e struct {
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		raw, _ := io.ReadAll(resp.Body)
		json.Unmarshal(raw, &e)
		return answer{resp.StatusCode, e.Error.Code}
	}
	// settle follows the retry rule.
	settle := func(op *keyedOp) {
		for {
			a := send(op.path, op.key, op.body)
			op.answers = append(op.answers, a)
			if a.status != 0 && a.status != http.StatusServiceUnavailable {
				return
			}
			time.Sleep(100 * time.Millisecond) // Retry-After is 1 s; shorter keeps the test lean
		}
	}

	const clients = 12
	stop := make(chan struct{})
	var wg sync.WaitGroup
	ops := make([][]*keyedOp, clients)
	for w := range clients {
		seller, buyer := fmt.Sprintf("s%d", w), fmt.Sprintf("b%d", w)
		for _, u := range []struct {
			id    string
			funds int
		}{{seller, 0}, {buyer, 1_000_000}} {
			if a := send("/api/users", "", map[string]any{"id": u.id, "name": u.id, "funds": u.funds}); a.status != http.StatusCreated {
				t.Fatalf("create user %s: %+v", u.id, a)
			}
		}
		wg.Go(func() {
			for j := 0; ; j++ {
				select {
				case <-stop:
					return
				default:
				}
				item := fmt.Sprintf("i%d-%d", w, j)
				grant := &keyedOp{path: "/api/users/" + seller + "/inventory", body: map[string]any{"item": item}}
				settle(grant)
				if a := grant.answers[len(grant.answers)-1]; a.status != http.StatusCreated && a.code != httpapi.CodeAlreadyExists {
					continue
				}
				list := &keyedOp{key: fmt.Sprintf("l%d-%d", w, j), path: "/api/listings",
					body: map[string]any{"seller": seller, "item": item, "price": 3}}
				settle(list)
				buy := &keyedOp{key: fmt.Sprintf("p%d-%d", w, j), path: "/api/purchases",
					body: map[string]any{"buyer": buyer, "seller": seller, "item": item, "price": 3}}
				settle(buy)
				ops[w] = append(ops[w], list, buy)
			}
		})
	}
	time.Sleep(time.Second)
	b.Server.Kill()
	waitHealth(t, hc, base, http.StatusServiceUnavailable, done)
	time.Sleep(1500 * time.Millisecond) // longer than the Redis client's own retries
	if err := b.Server.Restart(context.Background()); err != nil {
		t.Fatalf("restart redis-server: %v", err)
	}
	waitHealth(t, hc, base, http.StatusOK, done)
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()

	// What Redis holds: an operation applied iff its record exists (written
	// with its writes); receipts and listed counts show a double.
	k := markettrace.NewKeys(name)
	rctx := context.Background()
	receipts := map[string]int{}
	msgs, err := b.Client.XRange(rctx, k.Sales(), "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if op, _ := m.Values["op"].(string); op != "" {
			receipts[op]++
		}
	}
	var total, lost, twice, refusedApplied, open, outage, oldRuleNotApplied int
	for _, w := range ops {
		for _, op := range w {
			total++
			applied := b.Client.Exists(rctx, k.Op(op.key)).Val() == 1
			final := op.answers[len(op.answers)-1]
			ok := final.status == http.StatusOK || final.status == http.StatusCreated
			switch {
			case ok && !applied:
				lost++
				t.Errorf("%s %s: answered %+v but not applied", op.path, op.key, final)
			case !ok && applied:
				refusedApplied++
				t.Errorf("%s %s: settled by %+v although applied; answers %+v", op.path, op.key, final, op.answers)
			}
			if op.path == "/api/purchases" && receipts[op.key] > 1 {
				twice++
				t.Errorf("%s: %d receipts", op.key, receipts[op.key])
			}
			if op.path == "/api/listings" {
				item, _ := op.body["item"].(string)
				if n, _ := b.Client.HGet(rctx, k.Listed(), item).Int(); n > 1 {
					twice++
					t.Errorf("%s: %s listed %d times", op.key, item, n)
				}
			}
			if slices.ContainsFunc(op.answers, answer.open) {
				open++
			}
			if slices.ContainsFunc(op.answers, func(a answer) bool { return a.status == http.StatusServiceUnavailable }) {
				outage++
			}
			// The earlier rule stopped at the first answer that was not
			// outcome_unknown (nor missing).
			if i := slices.IndexFunc(op.answers, func(a answer) bool { return !a.open() }); i > 0 && applied &&
				op.answers[i].status == http.StatusServiceUnavailable {
				oldRuleNotApplied++
			}
		}
	}
	t.Logf("keyed operations %d: %d with a 503, %d with an open outcome; lost %d, applied twice %d, "+
		"settled as refused though applied %d; the earlier rule would have stopped at a 503 \"not applied\" "+
		"for %d operations that had applied", total, outage, open, lost, twice, refusedApplied, oldRuleNotApplied)
	if outage == 0 {
		t.Error("no operation saw a 503: the kill was not seen")
	}
}
