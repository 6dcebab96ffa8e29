package plumbing

import (
	"context"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// Unpeeked returns o with a dialer whose connections go-redis does not
// peek at each time it takes one from its pool. Before every command,
// go-redis clears the connection's deadlines (SetDeadline with no time:
// two timers of the runtime's poller deleted, and set again by the
// command) and peeks at its socket without blocking (a system call), the
// latter only on a connection that exposes its socket (syscall.Conn).
// The connections dialed here hide their socket and ignore SetDeadline:
// go-redis calls it only there, and sets the read or write deadline
// itself before each read and write (SetReadDeadline, SetWriteDeadline,
// which pass through). The peek finds a connection the server closed
// while it idled; the explorer's connections are its own and idle little
// within a search, and ConnMaxIdleTime is bounded to half a second, so
// that a connection the server may have closed for idling (its timeout
// setting counts whole seconds, a second at least) is dialed anew rather
// than used.
func Unpeeked(o redis.Options) redis.Options {
	dial := o.Dialer
	if dial == nil {
		dial = redis.NewDialer(&o)
	}
	o.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return opaqueConn{c}, nil
	}
	if o.ConnMaxIdleTime <= 0 || o.ConnMaxIdleTime > maxIdle {
		o.ConnMaxIdleTime = maxIdle
	}
	return o
}

// maxIdle bounds how long an Unpeeked connection stays in its pool unused.
const maxIdle = 500 * time.Millisecond

// opaqueConn is a connection with only net.Conn's methods, whose
// SetDeadline does nothing.
type opaqueConn struct{ net.Conn }

// SetDeadline does nothing (Unpeeked).
func (opaqueConn) SetDeadline(time.Time) error { return nil }
