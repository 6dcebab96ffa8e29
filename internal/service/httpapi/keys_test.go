package httpapi

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/testsupport/jsonkeys"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// lockedBuffer is a bytes.Buffer safe for the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.b.Bytes())
}

// TestJSONKeys sends requests to every route the server has, answered
// with success and with errors, and checks every JSON document it answers
// and every line of its JSON log: keys are snake_case at any depth and no
// value is a duration string. A route without a request here fails the
// test, so a new route cannot escape the check.
func TestJSONKeys(t *testing.T) {
	t.Parallel() // servers of its own
	requests := []struct {
		method, path, route, body string
		status                    int
	}{
		{"POST", "/api/users", "/api/users", `{"id":"frank","name":"Frank","funds":43}`, 201},
		{"POST", "/api/users", "/api/users", `{"name":"Frank"}`, 400},
		{"POST", "/api/users", "/api/users", `{"id":"alice","name":"Alice","funds":1}`, 409},
		{"GET", "/api/users?limit=2", "/api/users", ``, 200},
		{"GET", "/api/users?limit=0", "/api/users", ``, 400},
		{"GET", "/api/users/alice", "/api/users/:id", ``, 200},
		{"GET", "/api/users/nobody", "/api/users/:id", ``, 404},
		{"POST", "/api/users/bob/inventory", "/api/users/:id/inventory", `{"item":"bow"}`, 201},
		{"POST", "/api/users/bob/inventory", "/api/users/:id/inventory", `{"item":"sword"}`, 409},
		{"GET", "/api/market", "/api/market", ``, 200},
		{"POST", "/api/purchases", "/api/purchases", `{"buyer":"carol","seller":"alice","item":"sword","price":49}`, 409},
		{"POST", "/api/purchases", "/api/purchases", `{"buyer":"bob","seller":"alice","item":"sword","price":50}`, 409},
		{"POST", "/api/purchases?strategy=fine", "/api/purchases", `{"buyer":"carol","seller":"alice","item":"sword","price":50}`, 200},
		{"POST", "/api/purchases", "/api/purchases", `{"buyer":"carol","seller":"alice","item":"sword","price":50}`, 404},
		{"GET", "/api/users/carol/purchases", "/api/users/:id/purchases", ``, 200},
		{"GET", "/api/users/nobody/purchases", "/api/users/:id/purchases", ``, 404},
		{"GET", "/api/users/carol/purchases?limit=0", "/api/users/:id/purchases", ``, 400},
		{"POST", "/api/listings?strategy=coarse", "/api/listings", `{"seller":"bob","item":"bow","price":20}`, 201},
		{"POST", "/api/listings", "/api/listings", `{"seller":"bob","item":"bow","price":20}`, 409},
		{"POST", "/api/listings", "/api/listings", `{"seller":"bob","item":"bow","price":20,"pad":"` + strings.Repeat("x", 70<<10) + `"}`, 413},
		{"GET", "/api/strategy", "/api/strategy", ``, 200},
		{"PUT", "/api/strategy", "/api/strategy", `{"strategy":"lua"}`, 200},
		{"PUT", "/api/strategy", "/api/strategy", `{"strategy":"optimistic"}`, 400},
		{"GET", "/api/audit", "/api/audit", ``, 200},
		{"GET", "/api/audit", "/api/audit", ``, 429},
		{"GET", "/api/info", "/api/info", ``, 200},
		{"GET", "/healthz", "/healthz", ``, 200},
		{"GET", "/metrics", "/metrics", ``, 200},
		{"GET", "/", "/", ``, 200},
		{"GET", "/static/app.js", "/static*", ``, 200},
		{"GET", "/static/nothing.js", "/static*", ``, 404},
		{"POST", "/api/rush", "/api/rush", `{"buyers":2,"duration_ms":1000,"strategies":["lua"]}`, 202},
		{"POST", "/api/rush", "/api/rush", `{"buyers":2,"duration_ms":1000,"strategies":["lua"]}`, 409},
		{"POST", "/api/rush", "/api/rush", `{"buyers":0,"duration_ms":1000}`, 400},
		{"GET", "/api/rush", "/api/rush", ``, 200},
		{"DELETE", "/api/rush", "/api/rush", ``, 200},
		{"POST", "/api/lab/runs", "/api/lab/runs", `{"recipe":"6"}`, 202},
		{"POST", "/api/lab/runs", "/api/lab/runs", `{"recipe":"0"}`, 400},
		{"GET", "/api/lab/runs/nope", "/api/lab/runs/:id", ``, 404},
		{"GET", "/api/lab/scenarios", "/api/lab/scenarios", ``, 200},
		{"POST", "/api/explore/sessions", "/api/explore/sessions", `{"recipe":"1"}`, 201},
		{"POST", "/api/explore/sessions", "/api/explore/sessions", `{"recipe":"7"}`, 400},
		{"GET", "/api/explore/sessions/nope", "/api/explore/sessions/:id", ``, 404},
		{"POST", "/api/explore/sessions/nope/steps", "/api/explore/sessions/:id/steps", `{"kind":"run","client":"A"}`, 404},
		{"POST", "/api/explore/sessions/nope/undo", "/api/explore/sessions/:id/undo", ``, 404},
		{"POST", "/api/explore/sessions/nope/find", "/api/explore/sessions/:id/find", ``, 404},
		{"DELETE", "/api/explore/sessions/nope", "/api/explore/sessions/:id", ``, 404},
		{"DELETE", "/api/explore/sessions/nope/find", "/api/explore/sessions/:id/find", ``, 404},
		{"DELETE", "/api/market", "/api/market", ``, 405},
		{"GET", "/api/nothing", "", ``, 404},
	}
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		var logs lockedBuffer
		// The second audit comes within the hour's cooldown: 429.
		srv, err := New(withJobs(Config{Market: f.m, Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
			Env: output.NewEnv(b.Name, "7.0.15"), AuditCooldown: time.Hour}, b))
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		covered := map[string]bool{}
		documents := 0
		for _, rq := range requests {
			r := serve(srv.Handler(), rq.method, rq.path, rq.body)
			name := rq.method + " " + rq.path
			if r.status != rq.status {
				t.Errorf("%s: %d %s, want %d", name, r.status, clip(string(r.body)), rq.status)
			}
			covered[rq.method+" "+rq.route] = true
			if !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
				if strings.HasPrefix(rq.route, "/api/") || rq.route == "/healthz" || r.status >= 400 {
					t.Errorf("%s: Content-Type %q, want JSON", name, r.header.Get("Content-Type"))
				}
				continue
			}
			documents++
			jsonkeys.Check(t, name, r.body)
		}
		for _, rt := range srv.echo.Routes() {
			if !covered[rt.Method+" "+rt.Path] {
				t.Errorf("no request to %s %s", rt.Method, rt.Path)
			}
		}
		if lines := jsonkeys.CheckLines(t, "log", logs.Bytes()); lines < len(requests) {
			t.Errorf("%d log lines for %d requests", lines, len(requests))
		}
		if !bytes.Contains(logs.Bytes(), []byte(`"duration_ms":`)) {
			t.Errorf("the request log has no duration_ms:\n%s", logs.Bytes())
		}
		t.Logf("%d JSON documents checked", documents)
	})
}
