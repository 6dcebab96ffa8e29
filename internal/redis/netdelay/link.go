package netdelay

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

const (
	// chunkSize is the most one read takes in before it is queued.
	chunkSize = 32 << 10
	// queueLen is how many chunks are held at most; a full queue stops
	// reading, so TCP flow control reaches the sender.
	queueLen = 64
)

var chunkPool = sync.Pool{New: func() any {
	b := make([]byte, chunkSize)
	return &b
}}

// chunk is the bytes of one read, held until due.
type chunk struct {
	buf *[]byte
	n   int
	due time.Time
}

// link relays one client connection and its upstream connection. What the
// client sends is copied to the upstream at once; what the upstream sends
// back goes through a reader that stamps chunks and a writer that delivers
// them when due.
type link struct {
	client, upstream net.Conn
	// due stamps each chunk from the upstream with its delivery time;
	// only read calls it.
	due *Sampler
	// timer is the writer's timer, nil without delay.
	timer *waiter
	done  chan struct{}
	once  sync.Once
}

func newLink(client, upstream net.Conn, cfg Config, conn uint64) (*link, error) {
	l := &link{client: client, upstream: upstream, due: NewSampler(cfg, conn), done: make(chan struct{})}
	if cfg.delayed() {
		var err error
		if l.timer, err = newWaiter(); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// run relays until both directions have ended, then releases everything.
func (l *link) run() {
	var wg sync.WaitGroup
	wg.Go(func() { l.copyNow(l.upstream, l.client) })
	if l.timer == nil {
		wg.Go(func() { l.copyNow(l.client, l.upstream) })
	} else {
		q := make(chan chunk, queueLen)
		wg.Go(func() { l.read(l.upstream, q) })
		wg.Go(func() { l.write(l.client, q) })
	}
	wg.Wait()
	l.shut()
}

// copyNow copies src to dst as it comes, then half-closes dst.
func (l *link) copyNow(dst, src net.Conn) {
	if _, err := io.Copy(dst, src); err != nil {
		l.shut()
		return
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
}

// shut closes both connections and the timer, which ends every goroutine
// of the link. It may be called any number of times, from any goroutine.
func (l *link) shut() {
	l.once.Do(func() {
		close(l.done)
		l.client.Close()
		l.upstream.Close()
		if l.timer != nil {
			l.timer.close()
		}
	})
}

// read queues what src sends, each chunk stamped with its delivery time,
// and closes q when src ends. Reading never waits for a delivery.
func (l *link) read(src net.Conn, q chan<- chunk) {
	defer close(q)
	for {
		b := chunkPool.Get().(*[]byte)
		n, err := src.Read(*b)
		if n > 0 {
			select {
			case q <- chunk{buf: b, n: n, due: l.due.Due(time.Now())}:
			case <-l.done:
				chunkPool.Put(b)
				return
			}
		} else {
			chunkPool.Put(b)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				l.shut()
			}
			return
		}
	}
}

// write delivers each chunk of q to dst once it is due, in order: never
// before, and as late as the timer wakes after it. When the source has
// ended and every chunk is delivered, it half-closes dst so the peer sees
// the end of the stream after the last byte.
func (l *link) write(dst net.Conn, q <-chan chunk) {
	for c := range q {
		if err := l.timer.sleep(time.Until(c.due)); err != nil {
			l.shut()
			return
		}
		_, err := dst.Write((*c.buf)[:c.n])
		chunkPool.Put(c.buf)
		if err != nil {
			l.shut()
			return
		}
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
}
