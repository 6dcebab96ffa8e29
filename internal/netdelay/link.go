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
	// queueLen is how many chunks a direction holds in flight; a full queue
	// stops reading, so TCP flow control reaches the sender.
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

// link relays one client connection and its upstream connection, each
// direction through a reader that stamps chunks and a writer that delivers
// them when due.
type link struct {
	client, upstream net.Conn
	delay            time.Duration // one way
	// toUpstream and toClient are the writers' timers, nil without delay.
	toUpstream, toClient *waiter
	done                 chan struct{}
	once                 sync.Once
}

func newLink(client, upstream net.Conn, delay time.Duration) (*link, error) {
	l := &link{client: client, upstream: upstream, delay: delay, done: make(chan struct{})}
	if delay > 0 {
		var err error
		if l.toUpstream, err = newWaiter(); err != nil {
			return nil, err
		}
		if l.toClient, err = newWaiter(); err != nil {
			l.toUpstream.close()
			return nil, err
		}
	}
	return l, nil
}

// run relays until both directions have ended, then releases everything.
func (l *link) run() {
	var wg sync.WaitGroup
	l.pipe(&wg, l.client, l.upstream, l.toUpstream)
	l.pipe(&wg, l.upstream, l.client, l.toClient)
	wg.Wait()
	l.shut()
}

// pipe starts the reader and the writer of one direction.
func (l *link) pipe(wg *sync.WaitGroup, src, dst net.Conn, w *waiter) {
	q := make(chan chunk, queueLen)
	wg.Go(func() { l.read(src, q) })
	wg.Go(func() { l.write(dst, q, w) })
}

// shut closes both connections and both timers, which ends every goroutine
// of the link. It may be called any number of times, from any goroutine.
func (l *link) shut() {
	l.once.Do(func() {
		close(l.done)
		l.client.Close()
		l.upstream.Close()
		if l.toUpstream != nil {
			l.toUpstream.close()
			l.toClient.close()
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
			case q <- chunk{buf: b, n: n, due: time.Now().Add(l.delay)}:
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
func (l *link) write(dst net.Conn, q <-chan chunk, w *waiter) {
	for c := range q {
		if w != nil {
			if err := w.sleep(time.Until(c.due)); err != nil {
				l.shut()
				return
			}
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
