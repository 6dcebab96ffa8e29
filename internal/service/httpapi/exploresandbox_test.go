package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/service/exploresession"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// TestExploreLuaFiles: pasted scripts that reach for a file of the host
// (loadfile, dofile, require, io, os, setfenv around a chunk, load and
// loadstring of a built string, the global table) are refused, and the
// file's contents are in no answer, no line of the service's log and no
// metric.
func TestExploreLuaFiles(t *testing.T) {
	t.Parallel() // servers of its own
	redistest.RequireServer(t)
	b := redistest.Mini(t)
	f := newFixture(t, b)
	var logs bytes.Buffer
	srv, err := New(withJobs(Config{Market: f.m, Logger: slog.New(slog.NewTextHandler(&logs, nil))}, b))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	h := srv.Handler()
	secret := fmt.Sprintf("LOCKMARKET_ADMIN_TOKEN=%x", time.Now().UnixNano())
	path := filepath.Join(t.TempDir(), "token.env")
	if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{
		"return loadfile(%q)()",
		"return dofile(%q)",
		"return require(%q)",
		"return io.open(%q):read('*a')",
		"return os.execute('cat ' .. %q)",
		"local f = loadfile(%q) setfenv(f, setmetatable({}, {__index = function(_, k) error(k, 0) end})) return f()",
		"return loadstring('return lo' .. 'adfile(' .. %q .. ')()')()",
		"local s, done = 'return dofile(' .. %q .. ')', false\nreturn load(function() if done then return nil end done = true return s end)()",
		"return _G['load' .. 'file'](%q)()",
		// names built at run time pass the check: the sandbox refuses
		"local n = %q return getmetatable('').__index['d' .. 'ump'](n)",
		"return redis.call('GET', %q)",
	} {
		body, _ := json.Marshal(map[string]any{"lua": map[string]string{"acquire": fmt.Sprintf(src, path), "release": "return 0"}})
		r := serve(h, "POST", "/api/explore/sessions", string(body))
		if r.status == 201 {
			var ans struct {
				ID    string       `json:"id"`
				State exploreState `json:"state"`
			}
			r.decode(t, &ans)
			if s := serve(h, "POST", "/api/explore/sessions/"+ans.ID+"/steps", enabled(t, ans.State, "start", "A")); s.status == 200 {
				var st exploreState
				s.decode(t, &st)
				r = serve(h, "POST", "/api/explore/sessions/"+ans.ID+"/steps", enabled(t, st, "run", "A"))
			}
			serve(h, "DELETE", "/api/explore/sessions/"+ans.ID, "")
		}
		if r.status/100 == 2 && strings.Contains(src, "file") || strings.Contains(string(r.body), secret) {
			t.Errorf("%s: %d %s", src, r.status, r.body)
		}
	}
	m := serve(h, "GET", "/metrics", "")
	if strings.Contains(string(m.body), secret) || strings.Contains(logs.String(), secret) {
		t.Error("the file's contents in the metrics or the log")
	}
}

// TestExploreNoSandbox: where no redis-server can run pasted Lua (the
// configuration names one that is not there), pasting is 400 saying how
// to enable it; a recipe's session works.
func TestExploreNoSandbox(t *testing.T) {
	t.Parallel() // servers of its own
	b := redistest.Mini(t)
	f := newFixture(t, b)
	cfg := withJobs(Config{Market: f.m}, b)
	cfg.Explore.Close()
	cfg.Explore = exploresession.New(exploresession.Config{RedisServer: filepath.Join(t.TempDir(), "redis-server")})
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	h := srv.Handler()
	r := serve(h, "POST", "/api/explore/sessions", `{"lua":{"acquire":"return 1","release":"return 1"}}`)
	if r.status != 400 || r.code() != "invalid_request" || !strings.Contains(string(r.body), "install redis-server") {
		t.Errorf("pasted Lua without redis-server: %d %s", r.status, r.body)
	}
	if r := serve(h, "POST", "/api/explore/sessions", `{"recipe":"1"}`); r.status != 201 {
		t.Errorf("a recipe without redis-server: %d %s", r.status, r.body)
	}
}

// TestExploreBodyLimit: a body over an explorer route's limit is 413
// naming that route's limit, be its length declared or not.
func TestExploreBodyLimit(t *testing.T) {
	t.Parallel()
	srv, _ := newJobsServer(t, redistest.Mini(t))
	h := srv.Handler()
	for _, tc := range []struct {
		path    string
		size    int
		chunked bool
	}{
		{"/api/explore/sessions", 20 << 10, false},
		{"/api/explore/sessions", 100 << 10, false},
		{"/api/explore/sessions", 100 << 10, true},
		{"/api/explore/sessions/x/steps", 100 << 10, false},
		{"/api/explore/sessions/x/find", 100 << 10, true},
	} {
		body := `{"recipe":"` + strings.Repeat("x", tc.size) + `"}`
		req := httptest.NewRequest("POST", tc.path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if tc.chunked {
			req.ContentLength = -1
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusRequestEntityTooLarge || !strings.Contains(rec.Body.String(), "larger than 16384 bytes") {
			t.Errorf("%s, %d bytes (chunked %v): %d %s", tc.path, tc.size, tc.chunked, rec.Code, rec.Body)
		}
	}
}
