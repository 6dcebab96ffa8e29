package lease_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/locking/internal/lease"
)

func TestSiblingSharesTheSlot(t *testing.T) {
	for _, tc := range []struct{ key, want string }{
		{"lock:a", "{lock:a}:x"},     // no tag: the whole key becomes the tag
		{"{m}:lock:", "{m}:lock::x"}, // tagged: the tag is kept
		{"x{tag}y", "x{tag}y:x"},
		{"odd{}key", "odd{}key:x"}, // braces without a tag: left alone
	} {
		if got := lease.Sibling(tc.key, ":x"); got != tc.want {
			t.Errorf("Sibling(%q) = %q, want %q", tc.key, got, tc.want)
		}
	}
}

func TestCheckTTL(t *testing.T) {
	for _, tc := range []struct {
		ttl time.Duration
		ok  bool
	}{{time.Microsecond, false}, {0, false}, {-time.Second, false}, {time.Millisecond, true}, {time.Hour, true}} {
		if err := lease.CheckTTL(tc.ttl); (err == nil) != tc.ok {
			t.Errorf("CheckTTL(%v) = %v; want ok %v", tc.ttl, err, tc.ok)
		}
	}
}

func TestEndedWhileWaiting(t *testing.T) {
	notAcquired := errors.New("not acquired")
	network := errors.New("i/o timeout")
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name            string
		ctx             context.Context
		err             error
		wantNotAcquired bool
	}{
		{"live context: the error as it is", context.Background(), network, false},
		{"ended context: a give-up", ended, network, true},
		{"already a give-up", ended, notAcquired, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := lease.EndedWhileWaiting(tc.ctx, tc.err, notAcquired)
			if !errors.Is(got, tc.err) || errors.Is(got, notAcquired) != tc.wantNotAcquired {
				t.Fatalf("%v: wraps the error %v, not acquired %v; want true, %v",
					got, errors.Is(got, tc.err), errors.Is(got, notAcquired), tc.wantNotAcquired)
			}
		})
	}
}
