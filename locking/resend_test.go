package locking_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/locking"
)

// reply is an error reply from Redis, as go-redis reports one.
type reply string

func (r reply) Error() string { return string(r) }
func (reply) RedisError()     {}

var _ redis.Error = reply("")

// TestResendable: which failed releases are sent again in the background.
func TestResendable(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{reply("LOADING Redis is loading the dataset in memory"), true},
		{reply("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."), true},
		{reply("TRYAGAIN Multiple keys request during rehashing of slot"), true},
		{fmt.Errorf("wrapped: %w", reply("LOADING Redis is loading the dataset in memory")), true},
		{reply("READONLY You can't write against a read only replica."), false},
		{reply("ERR unknown command"), false},
		{reply("LOADINGX not a loading reply"), false},
		{redis.ErrClosed, false},
		{io.EOF, true},
		{syscall.ECONNREFUSED, true},
		{context.DeadlineExceeded, true},
		{errors.New("LOADING as text, not a reply: no answer"), true},
	} {
		if got := locking.Resendable(c.err); got != c.want {
			t.Errorf("Resendable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
