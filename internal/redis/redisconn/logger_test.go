package redisconn_test

import (
	"context"
	"strings"
	"testing"

	"github.com/lockmarket/lockmarket/internal/redis/redisconn"
)

func TestLogger(t *testing.T) {
	tests := []struct {
		name, format string
		args         []any
		want         string
	}{
		{"a message, as a line of the program", "redis: %s: discarding bad PubSub connection: %v\n",
			[]any{"127.0.0.1:1", "EOF"}, "simulate: redis client: redis: 127.0.0.1:1: discarding bad PubSub connection: EOF\n"},
		// The command that needed the connection returns the same error:
		// the program prints it once, there.
		{"a failed dial, left to the caller", "redis: %s:%d: failed to dial after %d attempts\n",
			[]any{"127.0.0.1", 1, 5}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			redisconn.NewLogger(&b, "simulate").Printf(context.Background(), tt.format, tt.args...)
			if b.String() != tt.want {
				t.Errorf("got %q, want %q", b.String(), tt.want)
			}
		})
	}
}
