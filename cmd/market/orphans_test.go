package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/redis/redisserver"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// TestSandboxOrphans: a service killed with SIGKILL while its sandboxes
// run a script that never ends leaves no sandbox process 5 s later; the
// next service sweeps the directories it left as it starts; and SIGHUP
// shuts a service down as SIGTERM does, its sandboxes and their
// directories with it.
func TestSandboxOrphans(t *testing.T) {
	b := redistest.Real(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // the service's sandboxes' directories, and no one else's

	svc, base := startMarket(t, b)
	spin(t, base)
	spin(t, base)
	redistest.WaitFor(t, "two sandboxes running a script", func() bool { return spinning(tmp) >= 2 })
	svc.cmd.Process.Signal(syscall.SIGKILL)
	<-svc.done
	redistest.WaitFor(t, "no sandbox process after the service's SIGKILL", func() bool {
		return len(processesUnder(tmp)) == 0
	})
	left := confinedDirs(t, tmp)
	if len(left) == 0 {
		t.Fatal("the killed service left no directory: nothing to sweep")
	}

	svc, base = startMarket(t, b)
	if dirs := confinedDirs(t, tmp); len(dirs) != 0 {
		t.Errorf("the next service left %v", dirs)
	}
	spin(t, base)
	redistest.WaitFor(t, "a sandbox running a script", func() bool { return spinning(tmp) >= 1 })
	svc.cmd.Process.Signal(syscall.SIGHUP)
	bound, cancel := redistest.UntilDeadline(context.Background(), t)
	defer cancel()
	select {
	case err := <-svc.done:
		if err != nil {
			t.Errorf("the service after SIGHUP: %v\n%s", err, svc.logs)
		}
	case <-bound.Done():
		svc.cmd.Process.Kill()
		t.Fatalf("the service outlived SIGHUP until the test's deadline\n%s", svc.logs)
	}
	if !strings.Contains(svc.logs.String(), "shutting down") {
		t.Errorf("SIGHUP: no graceful shutdown in the log:\n%s", svc.logs)
	}
	if n := len(processesUnder(tmp)); n != 0 {
		t.Errorf("%d sandbox processes after the service's graceful end", n)
	}
	if dirs := confinedDirs(t, tmp); len(dirs) != 0 {
		t.Errorf("directories after the service's graceful end: %v", dirs)
	}
}

// startMarket starts the service as a child process on b, and waits
// until it answers.
func startMarket(t *testing.T, b *redistest.Backend) (*service, string) {
	t.Helper()
	port, err := redisserver.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	svc := startService(t, "-addr", addr, "-redis", b.Addr(), "-name", "orphans")
	base := "http://" + addr
	redistest.WaitFor(t, "the service to answer", func() bool {
		res, err := http.Get(base + "/healthz")
		if err == nil {
			res.Body.Close()
		}
		return err == nil && res.StatusCode == http.StatusOK
	})
	return svc, base
}

// spin opens a session of pasted Lua whose take never ends, and sends
// its take, without waiting for the answer.
func spin(t *testing.T, base string) {
	t.Helper()
	type state struct {
		Enabled []json.RawMessage `json:"enabled"`
	}
	var s struct {
		ID    string `json:"id"`
		State state  `json:"state"`
	}
	send := func(path string, body []byte) (*http.Response, error) {
		return http.Post(base+path, "application/json", bytes.NewReader(body))
	}
	post := func(path string, body []byte, into any) {
		res, err := send(path, body)
		if err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
		defer res.Body.Close()
		out, _ := io.ReadAll(res.Body)
		if res.StatusCode >= 300 || json.Unmarshal(out, into) != nil {
			t.Fatalf("POST %s: %d %s", path, res.StatusCode, out)
		}
	}
	lua, _ := json.Marshal(map[string]any{"lua": map[string]string{
		"acquire": "while true do end",
		"release": "return redis.call('DEL', KEYS[1])",
	}})
	post("/api/explore/sessions", lua, &s)
	path := "/api/explore/sessions/" + s.ID + "/steps"
	// A starts, then runs its take: the script that never ends.
	st := s.State
	for _, kind := range []string{`"start"`, `"run"`} {
		var step json.RawMessage
		for _, a := range st.Enabled {
			if bytes.Contains(a, []byte(`"kind":`+kind)) && bytes.Contains(a, []byte(`"client":"A"`)) {
				step = a
			}
		}
		if step == nil {
			t.Fatalf("no %s of A among %s", kind, st.Enabled)
		}
		if kind == `"start"` {
			post(path, step, &st)
			continue
		}
		go func() {
			if res, err := send(path, step); err == nil {
				res.Body.Close()
			}
		}()
	}
}

// processesUnder lists the live processes whose working directory is
// under dir.
func processesUnder(dir string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
		if err == nil && strings.HasPrefix(cwd, dir+string(filepath.Separator)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// spinning is how many processes under dir run (state R) now and again
// 20 ms later: sandboxes that run a script that never ends (an idle
// redis-server waits for its clients, state S).
func spinning(dir string) int {
	running := func() map[int]bool {
		out := map[int]bool{}
		for _, pid := range processesUnder(dir) {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if i := bytes.LastIndexByte(b, ')'); err == nil && i > 0 &&
				strings.HasPrefix(strings.TrimSpace(string(b[i+1:])), "R") {
				out[pid] = true
			}
		}
		return out
	}
	first := running()
	time.Sleep(20 * time.Millisecond)
	n := 0
	for pid := range running() {
		if first[pid] {
			n++
		}
	}
	return n
}

// confinedDirs are the confined servers' directories in dir.
func confinedDirs(t *testing.T, dir string) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(dir, redisserver.ConfinedDirPrefix+"*"))
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}
