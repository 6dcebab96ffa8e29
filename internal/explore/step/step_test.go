package step_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/explore/sched"
	"github.com/lockmarket/lockmarket/internal/explore/step"
	"github.com/lockmarket/lockmarket/internal/explore/targets"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market"
)

// TestStepping steps through recipe 1 by hand on miniredis (as the lab
// does): Cut after a prefix, one step back, and FindFrom for the rest of a
// counterexample.
func TestStepping(t *testing.T) {
	b := redistest.Mini(t)
	ctx := context.Background()
	tg, _ := targets.Recipe("1", false)
	m := action.DefaultModel()
	m.Faults = 0
	e, err := sched.NewExplorer(ctx, b.Client, tg, m)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	st, err := step.Cut(ctx, e, nil)
	if err != nil || len(st.Enabled) != 2 || st.Enabled[0].Kind != action.Start || st.Complete {
		t.Fatalf("first state: %v, %+v", err, st)
	}
	if _, err := step.Cut(ctx, e, []action.Action{{Kind: action.Crash, Client: "A"}}); !errors.Is(
		err,
		sched.ErrNotEnabled,
	) {
		t.Errorf("a fault outside the model: %v", err)
	}
	first := st.Enabled[0]
	if st, err = step.Cut(ctx, e, []action.Action{first}); err != nil || len(st.Steps) != 1 {
		t.Fatalf("one step: %v, %+v", err, st)
	}
	res, err := step.FindFrom(ctx, e, nil, sched.Options{})
	if err != nil || len(res.Violations) == 0 ||
		res.Violations[0].Property != result.MutualExclusion {
		t.Fatalf("find: %v, %+v", err, res)
	}
	if st, err = step.Cut(ctx, e, res.Violations[0].Actions); err != nil {
		t.Fatal(err)
	}
	if len(st.Violations) == 0 || st.Violations[0].Property != result.MutualExclusion ||
		len(st.Holders) != 2 {
		t.Errorf("after the counterexample: %+v", st)
	}
}

// TestPipelineReplies: a pipeline one of whose commands fails (the
// market's first read sends XINFO on a stream that does not exist yet)
// shows that command's error, and the other commands' own replies.
func TestPipelineReplies(t *testing.T) {
	b := redistest.Real(t)
	ctx := context.Background()
	tg, err := targets.Strategy(market.Fine, false)
	if err != nil {
		t.Fatal(err)
	}
	m := action.DefaultModel()
	m.Clients = 2
	e, err := sched.NewExplorer(ctx, b.Client, tg, m)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var actions []action.Action
	for range 2 { // A starts, then sends its first pipeline
		snap, err := step.Cut(ctx, e, actions)
		if err != nil {
			t.Fatal(err)
		}
		actions = append(actions, snap.Enabled[0])
	}
	snap, err := step.Cut(ctx, e, actions)
	if err != nil {
		t.Fatal(err)
	}
	text := snap.Steps[1].Text
	if strings.Count(text, "error:") != 1 || !strings.Contains(text, "XINFO") ||
		!strings.Contains(text, "OK") {
		t.Errorf("step %q: want one error (XINFO's) and the other replies", text)
	}
}
