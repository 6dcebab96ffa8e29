package httpapi

import (
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// TestReadsAnswerAsReads: with Redis stopped (SIGSTOP: the service's
// commands go unanswered past its read timeout) and then killed (its
// connections refused), a read answers 503 redis_unavailable saying that
// it changed nothing, and a write answers with the write's wording:
// outcome_unknown and its retry rule while its commands go unanswered,
// redis_unavailable, nothing applied, while they cannot be sent.
func TestReadsAnswerAsReads(t *testing.T) {
	redistest.SkipShort(t, redistest.NeedServer) // real time: the full run has it
	f := newFaultFixture(t)
	reads := []string{"/api/users/carol", "/api/audit"}
	purchase := `{"buyer":"carol","seller":"alice","item":"sword","price":50}`
	check := func(t *testing.T, h http.Handler, server string, writeCode string, writeWords ...string) {
		t.Helper()
		for _, path := range reads {
			r := serve(h, "GET", path, "")
			var e errorBody
			r.decode(t, &e)
			if r.status != http.StatusServiceUnavailable || e.Error.Code != CodeRedisUnavailable ||
				!strings.Contains(e.Error.Message, msgRead) || strings.Contains(e.Error.Message, HeaderIdempotencyKey) ||
				r.header.Get("Retry-After") != "1" {
				t.Errorf("%s: GET %s: %d %s (Retry-After %q); want 503 %s saying %q",
					server, path, r.status, r.body, r.header.Get("Retry-After"), CodeRedisUnavailable, msgRead)
			}
		}
		r := serve(h, "POST", "/api/purchases", purchase)
		var e errorBody
		r.decode(t, &e)
		if r.status != http.StatusServiceUnavailable || e.Error.Code != writeCode || strings.Contains(e.Error.Message, msgRead) {
			t.Errorf("%s: POST /api/purchases: %d %s; want 503 %s with a write's wording", server, r.status, r.body, writeCode)
		}
		for _, w := range writeWords {
			if !strings.Contains(e.Error.Message, w) {
				t.Errorf("%s: POST /api/purchases: message %q lacks %q", server, e.Error.Message, w)
			}
		}
	}

	if err := f.b.Server.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	check(t, f.srv.Handler(), "redis-server stopped", CodeOutcomeUnknown, msgUnknown)
	if err := f.b.Server.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// Another service process: audits are spaced out per process.
	_, second := f.process(t)
	f.b.Server.Kill()
	check(t, second.Handler(), "redis-server killed", CodeRedisUnavailable, msgNotApplied)
}
