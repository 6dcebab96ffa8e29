package plumbing

import (
	"context"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/redis/go-redis/v9"
)

// TestUnpeeked checks that an Unpeeked connection hides its socket (so
// go-redis does not peek at it before each command), still carries
// commands, and idles at most half a second in its pool.
func TestUnpeeked(t *testing.T) {
	b := redistest.Real(t)
	cases := []struct {
		idle, want time.Duration
	}{
		{0, maxIdle},
		{-1, maxIdle},
		{time.Hour, maxIdle},
		{time.Millisecond, time.Millisecond},
	}
	for _, tc := range cases {
		o := Unpeeked(redis.Options{Addr: b.Addr(), ConnMaxIdleTime: tc.idle})
		if o.ConnMaxIdleTime != tc.want {
			t.Errorf("ConnMaxIdleTime %v: got %v, want %v", tc.idle, o.ConnMaxIdleTime, tc.want)
		}
		c, err := o.Dialer(context.Background(), "tcp", b.Addr())
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := c.(syscall.Conn); ok {
			t.Errorf("an Unpeeked connection is a syscall.Conn")
		}
		// SetDeadline does nothing: a deadline passed does not stop a
		// command; the read deadline does.
		c.SetDeadline(time.Now().Add(-time.Second))
		if _, err := c.Write([]byte("PING\r\n")); err != nil {
			t.Errorf("a write after SetDeadline in the past: %v", err)
		}
		buf := make([]byte, 7)
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "+PONG\r\n" {
			t.Errorf("a read after SetDeadline in the past: %q, %v", buf, err)
		}
		c.SetReadDeadline(time.Now().Add(-time.Second))
		if _, err := c.Read(buf); err == nil {
			t.Errorf("a read past its read deadline did not fail")
		}
		c.Close()
		rdb := redis.NewClient(&o)
		if err := rdb.Ping(context.Background()).Err(); err != nil {
			t.Errorf("PING over an Unpeeked connection: %v", err)
		}
		rdb.Close()
	}
}
