// Command class measures the explorer's sandbox under a class that
// attacks it: it starts a market binary, opens N explorer sessions at
// once, each from an address of its own (127.0.0.x), each pasting a lock
// whose acquire loops or grabs memory in a way written to dodge a bound,
// steps each to that script, and deletes each session. It reports each
// step's answer and time past the step's budget, each DELETE's time, the
// service's CPU and RSS, its sandboxes' RSS, and the longest answer of
// GET /api/market, polled throughout. Then it opens 60 sessions of a
// plain pasted lock and reports what they hold. With -honest N it runs
// the mixed class instead (mixed.go): N honest students, each stepping a
// correct lock and asking for a search, beside 6 attackers from two
// addresses. See README.md.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// attacks are acquire scripts, each written to dodge a bound.
var attacks = []struct{ name, src string }{
	{"loop, counter reset", "local n = 0 while true do n = n + 1 if n > 1000 then n = -math.huge end end"},
	{"loop in pcall, again", "while true do pcall(function() while true do end end) end"},
	{"loop in a coroutine", "local co = coroutine.wrap(function() while true do end end) while true do pcall(co) end"},
	{"write, then loop", "redis.call('SET', KEYS[1] .. 'w', 1) while true do end"},
	{"spin in string.find", "return string.find(('a'):rep(40), '(.-)(.-)(.-)(.-)(.-)(.-)(.-)(.-)(.-)b')"},
	{"grab by string method", "local t = {} for i = 1, 1e4 do t[i] = ('x'):rep(2^20) .. i end return 1"},
	{"grab in pcall, again", "local t = {} while true do pcall(function() t[#t + 1] = ('y'):rep(2^22) .. #t end) end"},
	{"grab of keys", "for i = 1, 1e7 do redis.call('SET', KEYS[1] .. i, ('z'):rep(1000)) end return 1"},
	{"recursion", "local function f(n) return f(n + 1) end return f(1)"},
	{"loadstring loop (refused by name)", "return loadstring('while true do end')()"},
}

const release = "return 0"

type result struct {
	attack             string
	start, step, del   int
	stepSecs, delSecs  float64
	stepMsg, startBody string
}

func main() {
	bin := flag.String("market", "", "market binary")
	n := flag.Int("n", 40, "sessions at once")
	port := flag.Int("port", 18480, "the market's port")
	honest := flag.Int("honest", 0, "with -honest N: the mixed class instead, N honest students beside 6 attackers")
	dur := flag.Duration("duration", 2*time.Minute, "how long the mixed class's attackers attack")
	atRest := flag.Int("rest", 60, "sessions of a plain pasted lock opened at rest after the attack, 6 per address")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "usage: class -market PATH [-n 40] [-port 18480]")
		os.Exit(2)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", *port)
	cmd := exec.Command(*bin, "-addr", fmt.Sprintf("127.0.0.1:%d", *port), "-redis", "auto", "-seed-demo")
	logf, err := os.CreateTemp("", "market-log-")
	must(err)
	defer os.Remove(logf.Name())
	cmd.Stdout, cmd.Stderr = logf, logf
	must(cmd.Start())
	defer func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }()
	pid := cmd.Process.Pid
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if r, err := http.Get(base + "/api/market"); err == nil && r.StatusCode == 200 {
			r.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			fmt.Fprintln(os.Stderr, "the market did not answer within 30 s")
			os.Exit(1)
		}
	}
	time.Sleep(2 * time.Second)
	rss0, ticks0 := rssKiB(pid), cpuTicks(pid)
	fmt.Printf("service pid %d: RSS %d KiB at rest\n", pid, rss0)
	if *honest > 0 {
		mixedClass(base, pid, *honest, *dur)
		return
	}

	w := watchService(base, pid)
	t0 := time.Now()
	results, lastDelete := attackAll(base, *n)
	fmt.Printf("%d sessions attacked at once in %.1f s\n", *n, time.Since(t0).Seconds())
	after, idleAt := cpuAfter(pid, lastDelete)
	w.stopWatching()
	left, leftN := children(pid)

	printAttacks(results)
	fmt.Printf("service CPU ticks (1/100 s) per 250 ms after the last DELETE: %s\n", strings.Join(after, " "))
	fmt.Printf("service CPU idle (<= 1 tick per 250 ms) %.2f s after the last DELETE; %d ticks in all since rest\n",
		idleAt, cpuTicks(pid)-ticks0)
	fmt.Printf("service RSS: %d KiB at rest, %d KiB at most (+%.1f MiB)\n", rss0, w.peakRSS, float64(w.peakRSS-rss0)/1024)
	fmt.Printf("sandboxes: at most %d at once holding %.1f MiB (PSS) in all; after: %d children of the service "+
		"(the market's own redis-server) holding %.1f MiB\n", w.peakSandboxes, float64(w.peakSandbox)/1024, leftN, float64(left)/1024)
	fmt.Printf("GET /api/market every 100 ms: %d polls, %d failed, longest %.3f s\n", w.polls, w.pollFails, w.maxMarket.Seconds())

	classAtRest(base, pid, *atRest)
}

// watcher polls /api/market every 100 ms and samples the service's RSS
// and its sandboxes' every 200 ms, until stopWatching.
type watcher struct {
	pid                                 int
	stopPoll, stopSample                chan struct{}
	pollWG, sampleWG                    sync.WaitGroup
	maxMarket                           time.Duration
	polls, pollFails                    int
	peakRSS, peakSandbox, peakSandboxes int
}

// watchService starts watching the service at base, process pid.
func watchService(base string, pid int) *watcher {
	w := &watcher{pid: pid, stopPoll: make(chan struct{}), stopSample: make(chan struct{})}
	w.pollWG.Go(func() {
		c := &http.Client{Timeout: 5 * time.Second}
		for {
			select {
			case <-w.stopPoll:
				return
			case <-time.After(100 * time.Millisecond):
			}
			t0 := time.Now()
			r, err := c.Get(base + "/api/market")
			d := time.Since(t0)
			w.polls++
			if err != nil || r.StatusCode != 200 {
				w.pollFails++
			}
			if err == nil {
				io.Copy(io.Discard, r.Body)
				r.Body.Close()
			}
			w.maxMarket = max(w.maxMarket, d)
		}
	})
	w.sampleWG.Go(func() {
		for {
			select {
			case <-w.stopSample:
				return
			case <-time.After(200 * time.Millisecond):
				w.sample()
			}
		}
	})
	return w
}

func (w *watcher) sample() {
	w.peakRSS = max(w.peakRSS, rssKiB(w.pid))
	k, m := children(w.pid)
	w.peakSandbox, w.peakSandboxes = max(w.peakSandbox, k), max(w.peakSandboxes, m)
}

// stopWatching stops the sampling (and takes one last sample), then the
// polls.
func (w *watcher) stopWatching() {
	close(w.stopSample)
	w.sampleWG.Wait()
	w.sample()
	close(w.stopPoll)
	w.pollWG.Wait()
}

// attackAll has n sessions, each from an address of its own, paste an
// attack at once, take two steps and delete the session; lastDelete is
// when the last DELETE answered.
func attackAll(base string, n int) (results []result, lastDelete time.Time) {
	results = make([]result, n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i := range n {
		wg.Go(func() {
			res := attackOnce(base, i)
			mu.Lock()
			if now := time.Now(); now.After(lastDelete) && res.start == 201 {
				lastDelete = now
			}
			mu.Unlock()
			results[i] = res
		})
	}
	wg.Wait()
	return results, lastDelete
}

// attackOnce is the i-th session's attack.
func attackOnce(base string, i int) result {
	a := attacks[i%len(attacks)]
	c := clientFrom(net.IPv4(127, 0, 1, byte(10+i)))
	res := result{attack: a.name}
	body, _ := json.Marshal(map[string]any{"lua": map[string]string{"acquire": a.src, "release": release}})
	status, out, _ := post(c, base+"/api/explore/sessions", body)
	res.start = status
	if status != 201 {
		res.startBody = string(out)
		return res
	}
	var s struct {
		ID    string `json:"id"`
		State struct {
			Enabled []json.RawMessage `json:"enabled"`
		} `json:"state"`
	}
	json.Unmarshal(out, &s)
	st, out, _ := post(c, base+"/api/explore/sessions/"+s.ID+"/steps", pick(s.State.Enabled, "start", "A"))
	var next struct {
		Enabled []json.RawMessage `json:"enabled"`
	}
	json.Unmarshal(out, &next)
	if st != 200 {
		res.stepMsg = string(out)
	} else {
		ts := time.Now()
		res.step, out, _ = post(c, base+"/api/explore/sessions/"+s.ID+"/steps", pick(next.Enabled, "run", "A"))
		res.stepSecs = time.Since(ts).Seconds()
		res.stepMsg = string(out)
	}
	td := time.Now()
	req, _ := http.NewRequest("DELETE", base+"/api/explore/sessions/"+s.ID, nil)
	if r, err := c.Do(req); err == nil {
		res.del = r.StatusCode
		r.Body.Close()
	}
	res.delSecs = time.Since(td).Seconds()
	return res
}

// cpuAfter reads the service's CPU after the last DELETE: ticks per 250
// ms, for 6 s, and how long after it the service was first idle.
func cpuAfter(pid int, lastDelete time.Time) (after []string, idleAt float64) {
	idleAt = -1.0
	prev := cpuTicks(pid)
	for k := 1; k <= 24; k++ {
		time.Sleep(250 * time.Millisecond)
		cur := cpuTicks(pid)
		after = append(after, strconv.Itoa(cur-prev))
		if cur-prev <= 1 && idleAt < 0 {
			idleAt = time.Since(lastDelete).Seconds()
		}
		prev = cur
	}
	return after, idleAt
}

// printAttacks prints each attack's answers, by attack.
func printAttacks(results []result) {
	sort.SliceStable(results, func(a, b int) bool { return results[a].attack < results[b].attack })
	fmt.Printf("%-34s %5s %5s %8s %5s %8s  %s\n", "attack", "start", "step", "step_s", "del", "del_s", "the step's answer")
	var worstPast, worstDel float64
	for _, r := range results {
		msg := r.stepMsg
		if r.start != 201 {
			msg = r.startBody
		}
		var e struct {
			Error struct{ Message string } `json:"error"`
		}
		json.Unmarshal([]byte(msg), &e)
		fmt.Printf("%-34s %5d %5d %8.2f %5d %8.3f  %.90s\n", r.attack, r.start, r.step, r.stepSecs, r.del, r.delSecs, e.Error.Message)
		worstPast = max(worstPast, r.stepSecs-2)
		worstDel = max(worstDel, r.delSecs)
	}
	fmt.Printf("longest step past the 2 s budget: %.2f s; longest DELETE: %.3f s\n", worstPast, worstDel)
}

// classAtRest opens n sessions of a plain lock, 6 per address, measures
// what they hold at rest, and deletes them.
func classAtRest(base string, pid, n int) {
	rssA := rssKiB(pid)
	sbA, nA := children(pid)
	var ids []string
	var refusals []string
	var idsMu sync.Mutex
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			c := clientFrom(net.IPv4(127, 0, 2, byte(10+i/6)))
			body := []byte(`{"lua":{"acquire":"if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end return 0",` +
				`"release":"if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"}}`)
			st, out, _ := post(c, base+"/api/explore/sessions", body)
			// the explorer's queue answers 429 when it is full: a class
			// that comes in at once tries again, for up to two minutes
			for t0 := time.Now(); st == http.StatusTooManyRequests && time.Since(t0) < 2*time.Minute; {
				time.Sleep(time.Second)
				st, out, _ = post(c, base+"/api/explore/sessions", body)
			}
			idsMu.Lock()
			defer idsMu.Unlock()
			if st != 201 {
				refusals = append(refusals, fmt.Sprintf("%d %.100s", st, out))
				return
			}
			var s struct{ ID string }
			json.Unmarshal(out, &s)
			ids = append(ids, s.ID)
		})
	}
	wg.Wait()
	time.Sleep(time.Second)
	rssB := rssKiB(pid)
	sbB, nB := children(pid)
	fmt.Printf("a class of %d at rest: %d sessions opened; sandboxes %d -> %d holding %.1f MiB "+
		"(PSS; %.2f MiB each); service RSS +%.1f MiB\n", n, len(ids), nA, nB, float64(sbB-sbA)/1024,
		float64(sbB-sbA)/1024/float64(max(nB-nA, 1)), float64(rssB-rssA)/1024)
	if len(refusals) > 0 {
		fmt.Printf("%d refused, the first: %s\n", len(refusals), refusals[0])
	}
	for _, id := range ids {
		req, _ := http.NewRequest("DELETE", base+"/api/explore/sessions/"+id, nil)
		if r, err := http.DefaultClient.Do(req); err == nil {
			r.Body.Close()
		}
	}
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// clientFrom is an HTTP client whose connections come from ip: the
// service bounds sessions per address.
func clientFrom(ip net.IP) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}}
	return &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, nw, addr string) (net.Conn, error) {
		return d.DialContext(ctx, nw, addr)
	}}}
}

func post(c *http.Client, url string, body []byte) (int, []byte, error) {
	r, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	defer r.Body.Close()
	out, err := io.ReadAll(r.Body)
	return r.StatusCode, out, err
}

// pick is the enabled action of kind for client, as JSON.
func pick(enabled []json.RawMessage, kind, client string) []byte {
	for _, a := range enabled {
		var x struct{ Kind, Client string }
		json.Unmarshal(a, &x)
		if x.Kind == kind && x.Client == client {
			return a
		}
	}
	return []byte(`{}`)
}

// rssKiB is process pid's resident set, in KiB.
func rssKiB(pid int) int { return field(fmt.Sprintf("/proc/%d/status", pid), "VmRSS:") }

// pssKiB is process pid's proportional set, in KiB: its resident pages,
// each shared one divided among the processes that map it (the
// redis-server binary's pages are shared by every sandbox).
func pssKiB(pid int) int { return field(fmt.Sprintf("/proc/%d/smaps_rollup", pid), "Pss:") }

func field(file, name string) int {
	b, _ := os.ReadFile(file)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, name); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	return 0
}

// cpuTicks is process pid's user and system time, in clock ticks.
func cpuTicks(pid int) int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.Atoi(f[11])
	k, _ := strconv.Atoi(f[12])
	return u + k
}

// children sums the PSS (KiB) of pid's child processes, and counts them.
func children(pid int) (kib, n int) {
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			cpid, _ := strconv.Atoi(filepath.Base(filepath.Dir(d)))
			kib += pssKiB(cpid)
			n++
		}
	}
	return kib, n
}
