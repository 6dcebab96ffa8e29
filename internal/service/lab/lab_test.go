package lab

import (
	"errors"
	"testing"

	"github.com/lockmarket/lockmarket/internal/service/jobs"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// TestMain reports the tests skipped for want of a real server (and fails
// them under CI=true).
func TestMain(m *testing.M) { redistest.Main(m) }

// TestStartRefused checks that the lab runs one run at a time and none
// after Close, and refuses what it cannot run before looking at either.
func TestStartRefused(t *testing.T) {
	b := redistest.Mini(t)
	l := New(b.Client, b.Mini, nil)
	recipe, other := "6", "7"
	for _, tc := range []struct {
		name string
		req  jobs.LabRequest
		want error
	}{
		{"unknown recipe", jobs.LabRequest{Recipe: &other}, jobs.ErrInvalid},
		{"empty", jobs.LabRequest{}, jobs.ErrInvalid},
		{"busy", jobs.LabRequest{Recipe: &recipe}, jobs.ErrBusy},
	} {
		l.mu.Lock()
		l.running = tc.name == "busy"
		l.mu.Unlock()
		if _, _, err := l.Start(tc.req); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	l.mu.Lock()
	l.running = false
	l.mu.Unlock()
	l.Close()
	if _, _, err := l.Start(jobs.LabRequest{Recipe: &recipe}); !errors.Is(err, jobs.ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
}
