package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/redis/redisserver"
	"github.com/lockmarket/lockmarket/internal/testsupport/race"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// counterOf is Lua that names the explorer's counter from the lock key
// (both in the session's namespace), for scripts that write it.
const counterOf = `local c = string.gsub(KEYS[1], '}:.*$', '}:counter') `

// takeLock is Lua that takes the lock as a correct acquire does.
const takeLock = `if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 0 end `

// TestSandboxAnswersBounded: a pasted acquire that fills the explorer's
// counter with 16 MiB of NUL bytes (a script may pass maxmemory, which
// Redis checks only as a script starts) gets answers of a few kilobytes,
// never its value whole, and the service stays under 400 MiB; a counter
// the explorer cannot read ('1.5', a word, a hash, past int64) or a reply
// of the wrong shape (a table, a string, megabytes of error) is a 400
// that names what was wanted, never a 5xx, and the service's log stays
// small. Against the service (this binary, run as main) with a real
// redis-server and its sandboxes.
func TestSandboxAnswersBounded(t *testing.T) {
	redistest.RequireServer(t)
	b := redistest.Real(t)
	port, err := redisserver.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	// A step's budget that a loaded machine does not reach: beside four
	// busy loops, building the 4 MiB reply in a sandbox at nice 19 ran
	// past the default's wall-clock backstop (16 s) before its size was
	// refused.
	svc := startService(t, "-addr", addr, "-redis", b.Addr(), "-name", "answers", "-step-budget", "1m")
	defer svc.stop()
	svc.logs.mu.Lock()
	svc.logs.max = 16 << 20
	svc.logs.mu.Unlock()
	base := "http://" + addr
	hc := &http.Client{Timeout: 2 * time.Minute}
	defer hc.CloseIdleConnections()
	waitHealth(t, hc, base, http.StatusOK, svc.done)
	rest, err := svc.rss()
	if err != nil {
		t.Fatal(err)
	}
	restHeap := heapBytes(t, hc, base)

	nul := counterOf + `redis.call('SETRANGE', c, 16 * 1024 * 1024 - 1, '\0') `
	tests := []struct {
		name, acquire string
		// want is in the message of the refused step, "" when every step
		// may answer 200.
		want string
	}{
		// the steps answer, until the end reads the counter
		{"16 MiB of NULs, refused", nul + `return 0`, "wants an integer"},
		{"16 MiB of NULs, read", takeLock + nul + `return 1`, "wants an integer"},
		{"a decimal", takeLock + counterOf + `redis.call('SET', c, '1.5') return 1`, "wants an integer"},
		{"a word", takeLock + counterOf + `redis.call('SET', c, 'one') return 1`, "wants an integer"},
		{"past int64", takeLock + counterOf + `redis.call('SET', c, string.rep('9', 40)) return 1`,
			"wants an integer"},
		{"a hash", takeLock + counterOf + `redis.call('HSET', c, 'n', '1') return 1`, "another type"},
		{"a table", takeLock + `return {1, 'x'}`, "table"},
		{"a table of one", takeLock + `return {1}`, "table"},
		{"a string", takeLock + `return 'OK'`, "want 1 or 0"},
		{"4 MiB of reply", `return string.rep('x', 4 * 1024 * 1024)`, "bytes)"},
		{"4 MiB of error", `return redis.error_reply(string.rep('e', 4 * 1024 * 1024))`, "bytes)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			statuses, refused := sandboxSession(t, hc, base, tt.acquire)
			for _, st := range statuses {
				if st >= 500 {
					t.Errorf("answers %v: a 5xx", statuses)
				}
			}
			switch {
			case tt.want == "" && refused != "":
				t.Errorf("a step refused: %s", refused)
			case tt.want != "" && !strings.Contains(refused, tt.want):
				t.Errorf("no step refused with %q: %v, %q", tt.want, statuses, refused)
			case tt.want == "wants an integer" && !strings.Contains(refused, "counter"):
				t.Errorf("the refusal does not name the key: %q", refused)
			}
		})
	}
	// Every session deleted, the service gives their memory back: its
	// Go heap and its RSS return to within a slack of their size at rest
	// (not the RSS under the race detector, whose shadow memory stays).
	rssOver := func(kib int64) bool { return !race.Enabled && kib > rest+rssSlack }
	heap, after := restHeap+heapSlack+1, rest+rssSlack+1
	for wait := time.Now(); (heap > restHeap+heapSlack || rssOver(after)) &&
		time.Since(wait) < memoryWait; time.Sleep(100 * time.Millisecond) {
		heap = heapBytes(t, hc, base)
		if after, err = svc.rss(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("after the sessions: service Go heap %d KiB (%d KiB at rest), RSS %d KiB", heap>>10, restHeap>>10, after)
	if heap > restHeap+heapSlack || rssOver(after) {
		t.Errorf("%v after the last session, the service's Go heap is %d KiB (%d KiB at rest, slack %d KiB), "+
			"its RSS %d KiB (%d KiB at rest, slack %d KiB)", memoryWait, heap>>10, restHeap>>10, heapSlack>>10,
			after, rest, rssSlack)
	}
	peak, err := procStatus(svc.cmd.Process.Pid, "VmHWM")
	if err != nil {
		t.Fatal(err)
	}
	logs := svc.logs.String()
	longest := 0
	for line := range strings.Lines(logs) {
		longest = max(longest, len(line))
	}
	t.Logf("service RSS %d KiB at rest, %d KiB at its peak; %d bytes of log, its longest line %d",
		rest, peak, len(logs), longest)
	if peak > 400<<10 {
		t.Errorf("the service's peak RSS is %d KiB, over 400 MiB", peak)
	}
	if longest > 2<<10 || len(logs) > 1<<20 {
		t.Errorf("the service logged %d bytes, a line of %d", len(logs), longest)
	}
}

// heapSlack and rssSlack are how far over its Go heap (bytes) and its RSS
// (KiB) at rest the service may be once every session of
// TestSandboxAnswersBounded is deleted (their values ran to 16 MiB, its
// RSS to about 100 MiB over), and memoryWait how long it may take to get
// there: a deleted session closes in the background.
const (
	heapSlack  = 16 << 20
	rssSlack   = 32 << 10
	memoryWait = time.Minute
)

// heapBytes is the service's Go heap (go_memstats_heap_alloc_bytes, live
// objects and those not yet collected), as its /metrics has it.
func heapBytes(t *testing.T, hc *http.Client, base string) int64 {
	t.Helper()
	resp, err := hc.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_memstats_heap_alloc_bytes "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return int64(f)
		}
	}
	t.Fatalf("no go_memstats_heap_alloc_bytes in /metrics (%v)", sc.Err())
	return 0
}

// sandboxSession opens a session of a pasted lock with acquire, takes up
// to 8 steps (the first enabled action each time), deletes it, and returns
// each answer's status and the message of the step refused, if one was.
// Every answer must be under 1 MB and quote no value whole.
func sandboxSession(t *testing.T, hc *http.Client, base, acquire string) (statuses []int, refused string) {
	t.Helper()
	const release = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`
	body, _ := json.Marshal(map[string]any{"lua": map[string]string{"acquire": acquire, "release": release}})
	call := func(method, path string, body []byte) (int, []byte) {
		req, err := http.NewRequest(method, base+path, strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		var out strings.Builder
		n, err := bufio.NewReader(resp.Body).WriteTo(&out)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		if n > 1_000_000 || strings.Contains(out.String(), strings.Repeat(`\u0000`, 1000)) {
			t.Errorf("%s %s: %d bytes of answer", method, path, n)
		}
		statuses = append(statuses, resp.StatusCode)
		return resp.StatusCode, []byte(out.String())
	}
	type state struct {
		Enabled []json.RawMessage `json:"enabled"`
	}
	st, ans := call("POST", "/api/explore/sessions", body)
	var s struct {
		ID    string `json:"id"`
		State state  `json:"state"`
	}
	if st != http.StatusCreated || json.Unmarshal(ans, &s) != nil {
		t.Fatalf("start: %d %.300s", st, ans)
	}
	path := "/api/explore/sessions/" + s.ID
	defer call("DELETE", path, nil)
	for i := 0; i < 8 && len(s.State.Enabled) > 0; i++ {
		st, ans = call("POST", path+"/steps", s.State.Enabled[0])
		if st != http.StatusOK {
			var e struct {
				Error struct{ Message string } `json:"error"`
			}
			json.Unmarshal(ans, &e)
			return statuses, e.Error.Message
		}
		if err := json.Unmarshal(ans, &s.State); err != nil {
			t.Fatal(err)
		}
	}
	return statuses, ""
}

// procStatus is the field name of /proc/PID/status, in KiB.
func procStatus(pid int, name string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+":"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", name, pid)
}
