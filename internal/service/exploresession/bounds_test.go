package exploresession_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/lockmarket/lockmarket/internal/service/api"
	"github.com/lockmarket/lockmarket/internal/service/exploresession"
)

// TestSessionSizeBounds: a step that would take a session's history, or
// its answer, past its bound ends the session with a message saying why,
// and the session is gone; below the bounds the steps answer.
func TestSessionSizeBounds(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		cfg  exploresession.Config
		want string
	}{
		{"history", exploresession.Config{MaxHistoryBytes: 6 << 10}, "its history would hold"},
		{"answer", exploresession.Config{MaxAnswerBytes: 10 << 10}, "this step's answer would be"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := exploresession.New(tt.cfg)
			defer m.Close()
			id, st, err := m.Start(ctx, "c", api.ExploreRequest{Recipe: ptr("1")})
			if err != nil {
				t.Fatal(err)
			}
			steps := 0
			for len(st.Enabled) > 0 {
				b, _ := json.Marshal(st.Enabled[0])
				st, err = m.Step(ctx, id, b)
				if err != nil {
					break
				}
				steps++
			}
			switch {
			case !errors.Is(err, api.ErrInvalid) || !strings.Contains(err.Error(), tt.want) ||
				!strings.Contains(err.Error(), "has ended"):
				t.Fatalf("after %d steps: %v, want a refusal saying %q", steps, err, tt.want)
			case steps == 0:
				t.Errorf("the first step refused: %v", err)
			}
			if _, err := m.State(ctx, id); !errors.Is(err, api.ErrNotFound) {
				t.Errorf("the session is still there: %v", err)
			}
		})
	}
}
