package explore

import (
	"context"
	"errors"
	"testing"

	"github.com/lockmarket/lockmarket/explore/sched"
)

// TestNamesMatchTheEngine holds the user's names of properties and modes
// to the engine's, which the JSON documents and the CLI use.
func TestNamesMatchTheEngine(t *testing.T) {
	for _, tc := range []struct{ user, engine string }{
		{string(MutualExclusion), sched.MutualExclusion},
		{string(Resource), sched.Resource},
		{string(Liveness), sched.Liveness},
		{string(Exhaustive), string(sched.Exhaustive)},
		{string(Random), string(sched.Random)},
		{string(PCT), string(sched.PCT)},
	} {
		if tc.user != tc.engine {
			t.Errorf("%q here is %q in the engine", tc.user, tc.engine)
		}
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
// or a negative bound, is ErrOption, before anything runs.
func TestOptionsRefuseUnknownValues(t *testing.T) {
	tg := &Target{Client: func(ctx context.Context, c *Client) error { return nil }}
	for _, o := range []Options{
		{Mode: "sideways"},
		{Properties: []Property{"ownership"}},
		{Stop: []Property{"speed"}},
		{FaultKinds: []string{"pause-sideways"}},
		{Iterations: -1},
		{Faults: -2},
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
