package explore

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/explore/sched"
)

// TestNamesMatchTheEngine holds the user's names of properties and modes
// to the engine's, which the JSON documents and the CLI use.
func TestNamesMatchTheEngine(t *testing.T) {
	for _, tc := range []struct{ user, engine string }{
		{string(MutualExclusion), result.MutualExclusion},
		{string(Resource), result.Resource},
		{string(Liveness), result.Liveness},
		{string(Exhaustive), string(sched.Exhaustive)},
		{string(Random), string(sched.Random)},
		{string(PCT), string(sched.PCT)},
	} {
		if tc.user != tc.engine {
			t.Errorf("%q here is %q in the engine", tc.user, tc.engine)
		}
	}
	// Every kind of fault the engine knows is one here, but those that
	// strike a node of several (a Target has one server) and "pause",
	// which stands for the three pauses on the command line.
	engine := []string{"pause", string(action.FaultNodeRestart), string(action.FaultClockJump)}
	for _, f := range allFaults {
		engine = append(engine, string(f))
	}
	for _, name := range action.FaultNames() {
		if !slices.Contains(engine, name) {
			t.Errorf("the engine's fault %q has no Fault here", name)
		}
	}
	if got, want := action.DefaultModel().FaultKinds, allFaults; !slices.Equal(got, want) {
		t.Errorf("the engine's default faults are %q, here %q", got, want)
	}
}

// TestOptionsReachTheEngine: each way of saying the faults, and the
// network's delay, is the engine's model it says.
func TestOptionsReachTheEngine(t *testing.T) {
	tg := &Target{Client: func(ctx context.Context, c *Client) error { return nil }}
	all := action.DefaultModel().FaultKinds
	for _, tc := range []struct {
		name  string
		o     Options
		n     int
		kinds []Fault
		delay time.Duration
	}{
		{"zero value", Options{}, 1, all, 0},
		{"no faults", Options{NoFaults: true}, 0, nil, 0},
		{"empty kinds", Options{FaultKinds: []Fault{}}, 1, all, 0},
		{"two faults", Options{Faults: 2}, 2, all, 0},
		{"kinds in the engine's names, once each",
			Options{FaultKinds: []Fault{Crash, PauseLong, Crash}}, 1,
			[]action.Fault{action.FaultCrash, action.FaultPauseLong}, 0},
		{"bounded delay", Options{MaxDelay: time.Second}, 1, all, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, so, err := engine(tg, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			m := so.Model
			if m.Faults != tc.n || !slices.Equal(m.FaultKinds, tc.kinds) || m.MaxDelay != tc.delay {
				t.Errorf("faults %d %q, max delay %v; want %d %q, %v",
					m.Faults, m.FaultKinds, m.MaxDelay, tc.n, tc.kinds, tc.delay)
			}
		})
	}
}

// TestEngineErrorsAnswerToTheUsers: each engine error a search returns
// answers errors.Is for the user's sentinel, with the engine's message.
func TestEngineErrorsAnswerToTheUsers(t *testing.T) {
	for _, p := range engineErrs {
		err := userError(p.engine)
		if !errors.Is(err, p.user) || !errors.Is(err, p.engine) || err.Error() != p.engine.Error() {
			t.Errorf("%v: errors.Is user %v, engine %v, message %q", p.engine,
				errors.Is(err, p.user), errors.Is(err, p.engine), err.Error())
		}
	}
	if err := errors.New("other"); userError(err) != err {
		t.Error("an error of no sentinel changed")
	}
}

// TestOptionsRefuseUnknownValues: an unknown mode, property or fault kind,
// a negative bound, faults with NoFaults or a delay bound out of range is
// ErrOption, before anything runs.
func TestOptionsRefuseUnknownValues(t *testing.T) {
	tg := &Target{Client: func(ctx context.Context, c *Client) error { return nil }}
	for _, o := range []Options{
		{Mode: "sideways"},
		{Properties: []Property{"ownership"}},
		{Stop: []Property{"speed"}},
		{FaultKinds: []Fault{"pause-sideways"}},
		{FaultKinds: []Fault{"pause"}},
		{FaultKinds: []Fault{action.FaultNodeRestart}},
		{Iterations: -1},
		{Faults: -1},
		{NoFaults: true, Faults: 1},
		{NoFaults: true, FaultKinds: []Fault{Crash}},
		{MaxDelay: -time.Second},
		{MaxDelay: time.Microsecond},
		{MaxDelay: 1500 * time.Microsecond},
		{MaxDelay: action.MaxTTL + time.Millisecond},
	} {
		if _, err := Check(context.Background(), nil, tg, o); !errors.Is(err, ErrOption) {
			t.Errorf("%+v: %v, want ErrOption", o, err)
		}
	}
	_, err := Check(context.Background(), nil, &Target{}, Options{})
	if !errors.Is(err, ErrNoClient) {
		t.Errorf("no Client: %v, want ErrNoClient", err)
	}
}
