package lease_test

import (
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
