//go:build linux && !netdelay_gotimer

package netdelay

import (
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// waiter sleeps with a timerfd waited for by the Go network poller: it
// wakes within tens of microseconds of its time, where a Go timer on Linux
// cannot wake sooner than about a millisecond after it was set (the poller
// waits for timers in whole milliseconds), and no thread is held while it
// sleeps.
type waiter struct {
	f   *os.File
	rc  syscall.RawConn
	buf [8]byte
}

func newWaiter() (*waiter, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("netdelay: timerfd: %w", err)
	}
	f := os.NewFile(uintptr(fd), "timerfd")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("netdelay: timerfd: %w", err)
	}
	return &waiter{f: f, rc: rc}, nil
}

// sleep returns after d, or with an error once close was called. Only one
// goroutine may sleep on a waiter at a time.
func (w *waiter) sleep(d time.Duration) error {
	if d <= 0 {
		return nil
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(d.Nanoseconds())}
	var serr error
	if err := w.rc.Control(func(fd uintptr) {
		serr = unix.TimerfdSettime(int(fd), 0, &spec, nil)
	}); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("netdelay: timerfd: %w", serr)
	}
	_, err := w.f.Read(w.buf[:])
	return err
}

// close ends a sleep in progress and every later one; it may be called
// from any goroutine.
func (w *waiter) close() { w.f.Close() }
