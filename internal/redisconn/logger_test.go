package redisconn_test

import (
	"context"
	"strings"
	"testing"

	"github.com/lockmarket/lockmarket/internal/redisconn"
)

func TestLogger(t *testing.T) {
	var b strings.Builder
	l := redisconn.NewLogger(&b, "simulate")
	l.Printf(context.Background(), "redis: %s:%d: failed to dial after %d attempts\n", "127.0.0.1", 1, 5)
	want := "simulate: redis client: redis: 127.0.0.1:1: failed to dial after 5 attempts\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}
