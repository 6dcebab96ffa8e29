package lab

import (
	"errors"
	"testing"

	"github.com/lockmarket/lockmarket/internal/service/api"
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
		req  api.LabRequest
		want error
	}{
		{"unknown recipe", api.LabRequest{Recipe: &other}, api.ErrInvalid},
		{"empty", api.LabRequest{}, api.ErrInvalid},
		{"busy", api.LabRequest{Recipe: &recipe}, api.ErrBusy},
	} {
		l.mu.Lock()
		l.running = tc.name == "busy"
		l.mu.Unlock()
		if _, err := l.Start(tc.req); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	l.mu.Lock()
	l.running = false
	l.mu.Unlock()
	l.Close()
	if _, err := l.Start(api.LabRequest{Recipe: &recipe}); !errors.Is(err, api.ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
}
