package redistest

import (
	"fmt"
	"testing"
)

// recordTB is a testing.TB that records a skip or a failure instead of
// ending the test.
type recordTB struct {
	testing.TB
	skipped, failed string
}

func (r *recordTB) Helper()                        {}
func (r *recordTB) Skipf(format string, a ...any)  { r.skipped = fmt.Sprintf(format, a...) }
func (r *recordTB) Fatalf(format string, a ...any) { r.failed = fmt.Sprintf(format, a...) }

// TestTally: a skip is a skip, or a failure on CI, and the summary counts
// them by need and reason in one line.
func TestTally(t *testing.T) {
	tests := []struct {
		name  string
		skips []skipKey // failed means: skipped on CI
		want  string
	}{
		{"none", nil, ""},
		{"one", []skipKey{{NeedBrowser, "chromium not on PATH", false}},
			"redistest: 1 browser test skipped: chromium not on PATH"},
		{"grouped and ordered", []skipKey{
			{NeedCluster, reasonShort, false},
			{NeedServer, reasonNoServer, false},
			{NeedServer, reasonNoServer, false},
			{NeedCluster, reasonNoCLI, false},
			{NeedServer, reasonNoServer, true},
			{NeedCluster, reasonShort, false},
		}, "redistest: 2 real-server tests skipped: redis-server not on PATH; " +
			"1 real-server test failed (CI=true): redis-server not on PATH; " +
			"2 cluster tests skipped: -short; 1 cluster test skipped: redis-cli not on PATH"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ty tally
			for _, k := range tt.skips {
				r := &recordTB{TB: t}
				ty.skip(r, k.need, k.reason, k.failed)
				if k.failed && (r.failed == "" || r.skipped != "") {
					t.Errorf("on CI: failed %q skipped %q; want a failure", r.failed, r.skipped)
				}
				if !k.failed && (r.skipped == "" || r.failed != "") {
					t.Errorf("off CI: failed %q skipped %q; want a skip", r.failed, r.skipped)
				}
			}
			if got := ty.summary(); got != tt.want {
				t.Errorf("summary:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestOnCI reads CI as a boolean.
func TestOnCI(t *testing.T) {
	for _, tt := range []struct {
		v    string
		want bool
	}{{"", false}, {"true", true}, {"1", true}, {"false", false}, {"yes", false}} {
		t.Setenv(CIEnv, tt.v)
		if got := onCI(); got != tt.want {
			t.Errorf("CI=%q: onCI() = %v, want %v", tt.v, got, tt.want)
		}
	}
}
