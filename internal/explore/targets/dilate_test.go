package targets

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/plumbing"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/explore/sched"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/redis/go-redis/v9"
)

// TestActionJSON: a tick's time goes to JSON in milliseconds, exact to the
// nanosecond, and comes back the same.
func TestActionJSON(t *testing.T) {
	for _, tc := range []struct {
		at   time.Duration
		json string
		text string
	}{
		{0, `{"kind":"tick"}`, "clock → t=0s"},
		{1500 * time.Millisecond, `{"kind":"tick","at_ms":1500}`, "clock → t=1.500s"},
		{10*time.Second/3 + 1, `{"kind":"tick","at_ms":3333.333334}`, "clock → t=3.333333334s"},
		{time.Nanosecond, `{"kind":"tick","at_ms":0.000001}`, "clock → t=0.000000001s"},
	} {
		a := action.Action{Kind: action.Tick, At: tc.at}
		b, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.json {
			t.Errorf("%v: JSON %s, want %s", tc.at, b, tc.json)
		}
		var back action.Action
		if err := json.Unmarshal(b, &back); err != nil || !back.Same(a) {
			t.Errorf("%s read back as %+v (%v)", b, back, err)
		}
		if got := a.String(); got != tc.text {
			t.Errorf("%v: %q, want %q", tc.at, got, tc.text)
		}
	}
	for _, in := range []string{
		`{"kind":"tick","at_ms":2.5e3}`,
		`{"kind":"tick","at_ms":2500.0000000001}`,
	} {
		var a action.Action
		if err := json.Unmarshal([]byte(in), &a); err != nil || a.At != 2500*time.Millisecond {
			t.Errorf("%s: %v (%v), want 2.5s", in, a.At, err)
		}
	}
	var a action.Action
	if err := json.Unmarshal([]byte(`{"kind":"tick","at_ms":1e300}`), &a); err == nil {
		t.Errorf("at_ms 1e300: no error")
	}
}

// TestWatchdogStalled: the watchdog's lease is renewed with its drift
// allowance to spare, so an advance of the clock can leave it about
// 100 ms; a machine that stalls 150 ms there (a busy machine once did)
// changed the verdict when time was not dilated. Dilated, the same schedules under
// the same stalls find the same (nothing), with no run again; undilated,
// one such stall makes its run unsteady.
func TestWatchdogStalled(t *testing.T) {
	b := redistest.Real(t)
	ctx := context.Background()
	m := action.DefaultModel()
	m.FaultKinds = []action.Fault{action.FaultPauseShort}
	const stall, near = 150 * time.Millisecond, 200 * time.Millisecond
	run := func(factor int64, stalls int) (*result.Result, int) {
		t.Helper()
		e, err := sched.NewExplorer(ctx, b.Client, Watchdog(false), m)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		e.Factor = factor
		fired := 0
		e.Stall = func(left time.Duration) {
			if left > 0 && left < near && fired < stalls {
				fired++
				time.Sleep(stall)
			}
		}
		res, err := e.Explore(ctx, sched.Options{Mode: "random", Seed: 3, Schedules: 40})
		if err != nil {
			t.Fatal(err)
		}
		return res, fired
	}
	calm, _ := run(plumbing.Dilation, 0)
	stalled, fired := run(plumbing.Dilation, 8)
	t.Logf(
		"calm: %d schedules, %d violations; stalled %d times", calm.Schedules, len(calm.Violations),
		fired,
	)
	if fired == 0 {
		t.Fatalf("no advance of the clock left a lease under %v: the test tests nothing", near)
	}
	if len(stalled.Violations) != len(calm.Violations) || stalled.Schedules != calm.Schedules ||
		stalled.Reruns != 0 {
		t.Errorf(
			"stalled %d times: %d violations in %d schedules, %d runs again; calm: %d in %d", fired,
			len(stalled.Violations), stalled.Schedules, stalled.Reruns, len(calm.Violations),
			calm.Schedules,
		)
	}
	if undilated, _ := run(1, 1); undilated.Reruns == 0 {
		t.Errorf(
			"undilated, a %v stall with a lease under %v left: no run again, want one", stall, near,
		)
	}
}

// TestVirtualArgs: a timeline reads and shows the leases commands set in
// virtual time.
func TestVirtualArgs(t *testing.T) {
	other := redis.NewScript("x") // any script but locking's: left as sent
	for _, tc := range []struct{ in, want string }{
		{"set k tok PX 10000000000 NX", "set k tok PX 10000 NX"},
		{"SET k tok nx ex 3000000 get", "SET k tok nx ex 3 get"},
		{"SET k tok EX 1500000", "SET k tok EX 1500000"}, // 1.5 s: not whole seconds
		{"pexpire k 2500000000", "pexpire k 2500"},
		{"expire k 7000000", "expire k 7"},
		{"psetex k 1000000000 v", "psetex k 1000 v"},
		{"get k", "get k"},
		{"evalsha " + other.Hash() + " 1 k tok 10000000000", "evalsha " + other.Hash() + " 1 k " +
			"tok 10000000000"},
	} {
		got := strings.Join(plumbing.VirtualArgs(plumbing.Dilation, strings.Fields(tc.in)), " ")
		if got != tc.want {
			t.Errorf("%s: %s, want %s", tc.in, got, tc.want)
		}
	}
}
