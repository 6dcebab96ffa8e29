package httpapi

import (
	"net/http"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// TestRushSamples: the round trip's measurement fits rushRTTBudget
// whatever the round trip asked (3 PINGs at least).
func TestRushSamples(t *testing.T) {
	for _, rtt := range []time.Duration{0, time.Microsecond, time.Millisecond, 7 * time.Millisecond, 100 * time.Millisecond,
		400 * time.Millisecond, MaxRushRTT} {
		n := rushSamples(rtt)
		if n < 3 || n > rushRTTSamples || (n > 3 && time.Duration(n)*rtt > rushRTTBudget) {
			t.Errorf("round trip %v: %d samples", rtt, n)
		}
	}
}

// TestRushBounded starts a rush whose round trip is long against its
// duration: it ends within its duration and rushGrace (before, the round
// trip's 200 PINGs and every user's creation paid the delay, a 1 s rush at
// 1 s took 232 s), and Close stops a rush with a round trip within the
// service's shutdown timeout (10 s).
func TestRushBounded(t *testing.T) {
	b := redistest.Real(t)
	srv, _ := newJobsServer(t, b)
	start := time.Now()
	r := serve(srv.Handler(), "POST", "/api/rush",
		`{"buyers":20,"listers":5,"duration_ms":1000,"rtt_ms":500,"strategies":["lua"]}`)
	if r.status != http.StatusAccepted {
		t.Fatalf("start: %d %s", r.status, r.body)
	}
	var st rushStatus
	waitForJob(t, srv.Handler(), "/api/rush", &st)
	if took, bound := time.Since(start), time.Second+rushGrace; took > bound {
		t.Errorf("a 1 s rush at 500 ms took %v, more than %v", took.Round(time.Millisecond), bound)
	}
	t.Logf("1 s rush at 500 ms round trip: %s, %.0f ms measured round trip", st.State, st.MeasuredRTTMS)

	r = serve(srv.Handler(), "POST", "/api/rush", `{"buyers":50,"duration_ms":60000,"rtt_ms":100}`)
	if r.status != http.StatusAccepted {
		t.Fatalf("start: %d %s", r.status, r.body)
	}
	for srv.jobs.rush.snapshot().Strategies[0].State != stateRunning {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // operations in flight through the delay
	start = time.Now()
	srv.Close()
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Close during a rush at 100 ms took %v", took.Round(time.Millisecond))
	}
	if st := srv.jobs.rush.snapshot(); st.State != stateCancelled {
		t.Errorf("after Close: %s", st.State)
	}
}
