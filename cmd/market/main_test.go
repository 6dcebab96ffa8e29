package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/redis/redisconn"
	"github.com/lockmarket/lockmarket/internal/redis/redisserver"
	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/service/httpapi"
	"github.com/lockmarket/lockmarket/internal/testsupport/jsonkeys"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market/markettrace"
)

// syncBuffer is a bytes.Buffer safe for the server's and the test's
// goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRun starts the whole program with demo data, uses it over HTTP, and
// stops it by cancelling its context: it shuts down cleanly.
func TestRun(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		port, err := redisserver.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var stdout, stderr syncBuffer
		done := make(chan error, 1)
		go func() {
			done <- run(ctx, []string{"-addr", addr, "-redis", b.Addr(), "-strategy", "watch",
				"-name", "demo", "-seed-demo", "-log-json", "-idempotency-ttl", "90m"}, &stdout, &stderr)
		}()

		base := "http://" + addr
		c := &http.Client{Timeout: 5 * time.Second}
		deadline, bounded := redistest.Deadline(t)
		for {
			res, err := c.Get(base + "/healthz")
			if err == nil {
				res.Body.Close()
				if res.StatusCode == http.StatusOK {
					break
				}
			}
			select {
			case err := <-done:
				t.Fatalf("run ended early: %v\n%s", err, stderr.String())
			default:
			}
			if bounded && time.Now().After(deadline) {
				t.Fatalf("service did not come up: %v\n%s", err, stderr.String())
			}
			time.Sleep(20 * time.Millisecond)
		}

		var listings struct{ Total int }
		getJSON(t, c, base+"/api/market", &listings)
		if listings.Total != 6 {
			t.Errorf("demo market has %d listings, want 6", listings.Total)
		}
		var info struct {
			Redis struct{ Mode, Version string }
		}
		getJSON(t, c, base+"/api/info", &info)
		if info.Redis.Mode != redisconn.ModeURL || b.Real() && info.Redis.Version == "" {
			t.Errorf("info: redis %+v", info.Redis)
		}
		var strategy struct{ Strategy string }
		getJSON(t, c, base+"/api/strategy", &strategy)
		if strategy.Strategy != "watch" {
			t.Errorf("strategy %q, want watch", strategy.Strategy)
		}
		req, err := http.NewRequest("POST", base+"/api/purchases",
			strings.NewReader(`{"buyer":"alice","seller":"bob","item":"bow","price":80}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(httpapi.HeaderIdempotencyKey, "run-1")
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Errorf("purchase: %d", res.StatusCode)
		}
		// -idempotency-ttl is the lifetime of the key's record.
		ttl, err := b.Client.PTTL(context.Background(), markettrace.NewKeys("demo").Op("run-1")).Result()
		if err != nil || ttl <= 80*time.Minute || ttl > 90*time.Minute {
			t.Errorf("the Idempotency-Key is kept for %v (%v); want 90m", ttl, err)
		}

		// run bounds its own shutdown (-shutdown-timeout); the test sets no
		// deadline of its own.
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("run: %v", err)
		}
		if !strings.Contains(stdout.String(), "serving demo") || !strings.Contains(stdout.String(), "loopback only") {
			t.Errorf("stdout: %q", stdout.String())
		}
		logs := stderr.String()
		for _, want := range []string{`"msg":"request"`, `"route":"/api/purchases"`, `"msg":"demo data"`, `"msg":"stopped"`,
			`"timeout_s":10`} {
			if !strings.Contains(logs, want) {
				t.Errorf("no %s in the logs:\n%s", want, logs)
			}
		}
		// Every JSON log line follows the output schema (the lines of the
		// Redis connection before the logger starts are plain text).
		var jsonLines bytes.Buffer
		for line := range strings.Lines(logs) {
			if strings.HasPrefix(line, "{") {
				jsonLines.WriteString(line)
			}
		}
		if n := jsonkeys.CheckLines(t, "log", jsonLines.Bytes()); n < 5 {
			t.Errorf("%d JSON log lines:\n%s", n, logs)
		}
		if _, err := c.Get(base + "/healthz"); err == nil {
			t.Error("still serving after shutdown")
		}
	})
}

func getJSON(t *testing.T, c *http.Client, url string, v any) {
	t.Helper()
	res, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, res.StatusCode, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// TestRunBadFlags checks that bad command lines fail before anything is
// started.
func TestRunBadFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown strategy", []string{"-strategy", "optimistic"}, "unknown strategy"},
		{"bad market name", []string{"-name", "a.b"}, "market name"},
		{"unknown flag", []string{"-port", "80"}, "flag provided but not defined"},
		{"extra argument", []string{"serve"}, "unexpected arguments"},
		{"bad redis", []string{"-redis", "nowhere"}, "not auto"},
		{"body limit", []string{"-body-limit", "0"}, "-body-limit"},
		{"idempotency TTL too short", []string{"-idempotency-ttl", "500us"}, "-idempotency-ttl"},
		{"idempotency TTL not a duration", []string{"-idempotency-ttl", "1 day"}, "invalid value"},
		{"audit cooldown zero", []string{"-audit-cooldown", "0s"}, "-audit-cooldown"},
		{"no session per address", []string{"-sessions-per-address", "0"}, "-sessions-per-address"},
		{"more per address than in all", []string{"-sessions-per-address", "61", "-sessions-total", "60"},
			"-sessions-per-address 61"},
		{"sessions total too large", []string{"-sessions-total", "100000"}, "-sessions-total"},
		{"step budget too short", []string{"-step-budget", "1ms"}, "-step-budget 1ms"},
		{"step budget too long", []string{"-step-budget", "1h"}, "-step-budget 1h0m0s"},
		{"every interface without a token", []string{"-addr", ":8080"}, "not a loopback address"},
		{"a public address without a token", []string{"-addr", "0.0.0.0:8080"}, "-admin-token"},
		{"a host name without a token", []string{"-addr", "example.com:8080"}, "not a loopback address"},
		{"an address without a port", []string{"-addr", "127.0.0.1"}, "-addr"},
	}
	t.Setenv(envAdminToken, "")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			err := run(context.Background(), tt.args, io.Discard, &stderr)
			if err == nil || !strings.Contains(err.Error()+stderr.String(), tt.want) {
				t.Fatalf("run %v: %v (%s); want an error with %q", tt.args, err, stderr.String(), tt.want)
			}
			// A mistake in the command line exits with status 2.
			var usage usageError
			if !errors.As(err, &usage) {
				t.Fatalf("run %v: %v is not a usage error (exit 2)", tt.args, err)
			}
		})
	}
	if err := run(context.Background(), []string{"-h"}, io.Discard, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v, want flag.ErrHelp", err)
	}
}

// TestVersion: "market version" and "market -version" print the version
// line and exit 0, as simulate's do; "market version x" is a usage error.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"-version"}, {"version"}} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), args, &stdout, io.Discard)
		if code := exitCode(err, &stderr); code != 0 {
			t.Fatalf("%q: exit %d, %v: %s", args, code, err, stderr.String())
		}
		if got := stdout.String(); got != output.VersionLine("market")+"\n" || !strings.HasPrefix(got, "market ") {
			t.Errorf("%q printed %q", args, got)
		}
	}
	err := run(context.Background(), []string{"version", "x"}, io.Discard, io.Discard)
	if code := exitCode(err, io.Discard); code != 2 {
		t.Errorf("version x: exit %d (%v), want 2", code, err)
	}
}

// TestHelpAndErrorsFit: -h, and each kind of mistake with its hint line,
// print lines of at most output.Width columns; a mistake ends with where
// the usage is.
func TestHelpAndErrorsFit(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"-bogus"}, {"-strategy", "optimistic"}, {"-addr", "0.0.0.0:1"},
		{"-name", strings.Repeat("x", 80)}, {"extra", "args"}} {
		var stdout, stderr bytes.Buffer
		code := exitCode(run(context.Background(), args, &stdout, &stderr), &stderr)
		out := stdout.String() + stderr.String()
		if args[0] != "-h" && (code != 2 || !strings.HasSuffix(out, "run 'market -h' for usage\n")) {
			t.Errorf("%q: exit %d, printed %q; want 2 and the hint line", args, code, out)
		}
		for _, line := range strings.Split(out, "\n") {
			if n := len([]rune(line)); n > output.Width {
				t.Errorf("%q printed a line of %d columns:\n%s", args, n, line)
			}
		}
	}
}
