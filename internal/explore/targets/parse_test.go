package targets_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/result"
)

func TestParseBounds(t *testing.T) {
	tests := []struct {
		in      string
		want    action.Model // the bounds set on DefaultModel
		wantErr string       // "" for none, "form" for ErrBoundForm
	}{
		{in: "", want: action.DefaultModel()},
		{in: "iterations=2, ticks=5,steps=20", want: func() action.Model {
			m := action.DefaultModel()
			m.Iterations, m.Ticks, m.Steps = 2, 5, 20
			return m
		}()},
		{in: "attempts=3,faults=0", want: func() action.Model {
			m := action.DefaultModel()
			m.Attempts, m.Faults = 3, 0
			return m
		}()},
		{in: "iterations", wantErr: "form"},
		{in: "iterations=x", wantErr: "form"},
		{
			in:      "rounds=2",
			wantErr: `unknown bound "rounds" (want iterations, attempts, faults, ticks, steps)`,
		},
	}
	for _, tc := range tests {
		m := action.DefaultModel()
		err := action.ParseBounds(tc.in, &m)
		switch {
		case tc.wantErr == "form":
			if !errors.Is(err, action.ErrBoundForm) {
				t.Errorf("ParseBounds(%q) = %v, want ErrBoundForm", tc.in, err)
			}
		case tc.wantErr != "":
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("ParseBounds(%q) = %v, want %s", tc.in, err, tc.wantErr)
			}
		case err != nil:
			t.Errorf("ParseBounds(%q) = %v", tc.in, err)
		case m.Iterations != tc.want.Iterations || m.Attempts != tc.want.Attempts ||
			m.Faults != tc.want.Faults ||
			m.Ticks != tc.want.Ticks || m.Steps != tc.want.Steps:
			t.Errorf("ParseBounds(%q) set %+v, want %+v", tc.in, m, tc.want)
		}
	}
}

func TestParseLeases(t *testing.T) {
	got, err := action.ParseLeases("10s, 3s,1m")
	if want := []time.Duration{10 * time.Second, 3 * time.Second, time.Minute}; err != nil ||
		!slices.Equal(got, want) {
		t.Errorf("ParseLeases = %v, %v, want %v", got, err, want)
	}
	for _, in := range []string{"", "10s,", "ten"} {
		if got, err := action.ParseLeases(in); err == nil {
			t.Errorf("ParseLeases(%q) = %v, want an error", in, got)
		}
	}
}

func TestParseProperties(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		bad  bool
	}{
		{in: "", want: nil},
		{in: "all", want: result.Properties()},
		{
			in:   "liveness, mutual_exclusion",
			want: []string{result.Liveness, result.MutualExclusion},
		},
		{in: "safety", bad: true},
	}
	for _, tc := range tests {
		got, err := result.ParseProperties(tc.in)
		if (err != nil) != tc.bad || !slices.Equal(got, tc.want) {
			t.Errorf(
				"ParseProperties(%q) = %v, %v, want %v (error: %v)", tc.in, got, err, tc.want,
				tc.bad,
			)
		}
	}
}

// TestParsePropertiesAllIsACopy: the list "all" gives is the caller's,
// so changing it leaves explore.Properties() as it was.
func TestParsePropertiesAllIsACopy(t *testing.T) {
	want := slices.Clone(result.Properties())
	got, err := result.ParseProperties("all")
	if err != nil {
		t.Fatal(err)
	}
	got[0] = "changed"
	if !slices.Equal(result.Properties(), want) {
		t.Errorf(
			"explore.Properties() is %v after changing ParseProperties' answer, want %v",
			result.Properties(), want,
		)
	}
}
