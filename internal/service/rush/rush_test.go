package rush

import (
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/service/api"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market"
)

// TestMain reports the tests skipped for want of a real server (and fails
// them under CI=true).
func TestMain(m *testing.M) { redistest.Main(m) }

// TestRushSamples: the round trip's measurement fits rushRTTBudget
// whatever the round trip asked (3 PINGs at least).
func TestRushSamples(t *testing.T) {
	for _, rtt := range []time.Duration{0, time.Microsecond, time.Millisecond, 7 * time.Millisecond, 100 * time.Millisecond,
		400 * time.Millisecond, time.Second} {
		n := rushSamples(rtt)
		if n < 3 || n > rushRTTSamples || (n > 3 && time.Duration(n)*rtt > rushRTTBudget) {
			t.Errorf("round trip %v: %d samples", rtt, n)
		}
	}
}

// wait polls r until its rush is no longer running (at most a minute).
func wait(t *testing.T, r *Runner) api.RushStatus {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		st := r.snapshot()
		if st.State != api.StateRunning {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("the rush still runs after a minute: %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRushBounded starts a rush whose round trip is long against its
// duration: it ends by itself, within its duration and rushGrace (before,
// the round trip's 200 PINGs and every user's creation paid the delay: a
// 1 s rush at 1 s took 232 s); and Close stops a rush with a round trip,
// which ends cancelled.
func TestRushBounded(t *testing.T) {
	// Real time: a rush through a 500 ms round trip. In -short,
	// internal/httpapi's TestRushRefused and TestCloseStopsRush start and
	// stop rushes; the full run has this and TestRush there.
	redistest.SkipShort(t, redistest.NeedServer)
	b := redistest.Real(t)
	r := New(b.Client, false, "redis-server", nil)
	defer r.Close()
	start := time.Now()
	if _, err := r.Start(api.RushConfig{Buyers: 20, Listers: 5, Duration: time.Second,
		RTT: 500 * time.Millisecond, Strategies: []market.Strategy{market.Lua}}); err != nil {
		t.Fatal(err)
	}
	st := wait(t, r)
	// The bound leaves the operations in flight at the end their own
	// limits (10 s a purchase) on a loaded machine; before, the round
	// trip's measurement alone took 200 PINGs at 500 ms, 100 s.
	if took, bound := time.Since(start), time.Second+rushGrace+30*time.Second; took > bound {
		t.Errorf("a 1 s rush at 500 ms took %v, more than %v", took.Round(time.Millisecond), bound)
	}
	t.Logf("1 s rush at 500 ms round trip: %s, %.0f ms measured round trip", st.State, st.MeasuredRTTMS)

	if _, err := r.Start(api.RushConfig{Buyers: 50, Listers: 5, Duration: time.Minute,
		RTT: 100 * time.Millisecond, Strategies: []market.Strategy{market.Watch}}); err != nil {
		t.Fatal(err)
	}
	for r.snapshot().Strategies[0].State != api.StateRunning {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // operations in flight through the delay
	r.Close()
	if st := r.snapshot(); st.State != api.StateCancelled {
		t.Errorf("after Close: %s", st.State)
	}
}
