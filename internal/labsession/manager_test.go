package labsession_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lockmarket/lockmarket/explore"
	"github.com/lockmarket/lockmarket/internal/jobs"
	"github.com/lockmarket/lockmarket/internal/labsession"
)

// TestStrategySessions: a session of the market's fine lock without
// fencing finds the listing sold twice; a bad strategy is refused.
func TestStrategySessions(t *testing.T) {
	ctx := context.Background()
	m := labsession.NewManager()
	defer m.Close()
	s := func(v string) *string { return &v }
	for _, req := range []jobs.ExploreRequest{
		{Strategy: s("nope")},
		{Strategy: s("fine"), Fixed: true},
	} {
		if _, _, err := m.Start(ctx, req); !errors.Is(err, jobs.ErrInvalid) {
			t.Errorf("Start(%q, fixed %v): %v, want ErrInvalid", *req.Strategy, req.Fixed, err)
		}
	}
	id, st, err := m.Start(ctx, jobs.ExploreRequest{Strategy: s("fine")})
	if err != nil {
		t.Fatal(err)
	}
	state := st.(labsession.State)
	if state.Target != "strategy fine" || len(state.Clients) != 3 || len(state.Enabled) == 0 ||
		!strings.Contains(state.Resource, "listed [sword at 10]") {
		t.Fatalf("at the start: %+v", state)
	}
	got, err := m.Find(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	f := got.(labsession.Found)
	if !f.Found || f.Property != explore.Resource || !strings.Contains(f.Message, "sold twice") {
		t.Errorf("find: %+v, want the sword sold twice", f)
	}
	t.Logf("found after %d schedules, %.0f ms: %s", f.Schedules, f.ElapsedMS, f.Message)
}
