package redistest

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/lockmarket/lockmarket/internal/redis/redisserver"
)

// The go command shows a passing package's output only once the package
// is done, and then only with -v: "go test ./..." says nothing while a
// slow package runs and hides that tests were skipped. So Main also
// writes a few lines straight to the terminal (/dev/tty), which the go
// command does not capture: that redis-server is missing, once per go
// command, and every progressEvery that a package is still running.
// Without a terminal (CI, a pipe from a detached process), or with
// QuietEnv=1, it writes nothing.

// QuietEnv, set to 1, keeps Main from writing to the terminal.
const QuietEnv = "LOCKMARKET_TEST_QUIET"

// progressEvery is how often a running package says it is still running.
const progressEvery = 45 * time.Second

// terminal opens the controlling terminal for writing, or returns nil.
func terminal() io.WriteCloser {
	if os.Getenv(QuietEnv) == "1" || onCI() {
		return nil
	}
	f, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0)
	if err != nil {
		return nil
	}
	return f
}

// packageName is the test binary's package, from its name ("explore.test").
func packageName() string {
	return strings.TrimSuffix(filepath.Base(os.Args[0]), ".test")
}

// sayNoServer writes, once per go command (the test binaries' parent),
// that there is no redis-server and what follows from it.
func sayNoServer(w io.Writer) {
	if _, err := redisserver.Binary(); err == nil {
		return
	}
	// The marker names the go command by its pid and its start time, so
	// that a later command given the same pid is not taken for it.
	ppid := os.Getppid()
	start := ""
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", ppid)); err == nil {
		if i := strings.LastIndexByte(string(b), ')'); i > 0 {
			if f := strings.Fields(string(b[i+1:])); len(f) > 19 {
				start = f[19] // starttime, field 22 of proc(5)
			}
		}
	}
	marker := filepath.Join(os.TempDir(), fmt.Sprintf("lockmarket-test-noserver-%d-%s", ppid, start))
	f, err := os.OpenFile(marker, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return // said already, or cannot tell: say nothing rather than every package
	}
	f.Close()
	fmt.Fprintln(w, "go test: no redis-server on PATH: the tests that need a real server are skipped, "+
		"and each")
	fmt.Fprintln(w, "         package's -v output names them (docs/testing.md); under CI=true they fail")
}

// talk starts the terminal lines of Main; the returned func stops them and
// waits for their goroutine.
func talk() (stop func()) {
	w := terminal()
	if w == nil {
		return func() {}
	}
	sayNoServer(w)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		start := time.Now()
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintf(w, "go test: %s still running after %v\n", packageName(),
					time.Since(start).Round(time.Second))
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
		w.Close()
	}
}
