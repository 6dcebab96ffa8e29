package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/failure/history"
	"github.com/lockmarket/lockmarket/internal/redis/redisserver"
	"github.com/lockmarket/lockmarket/internal/service/httpapi"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// The soak runs the service (this program, as a child process of its own so
// that its memory can be measured) against a private redis-server with an
// fsync-always append-only file, under many concurrent clients, and
// injects a fault at a fixed interval, in turn: Redis stalled (SIGSTOP)
// longer than the service's Redis read timeout, every client connection of
// Redis killed repeatedly (CLIENT KILL), and redis-server killed and
// restarted. Clients send every listing and purchase with an
// Idempotency-Key and, while the answer leaves it open (no answer, or a
// 503), send it again with the same key until it is answered. Beside them,
// one client runs a short rush after another (POST /api/rush, in markets of
// the rush's own on the same Redis) for the whole run.
//
// It checks: every acknowledged purchase applied exactly once (the
// clients' own records of what they asked for and were told, against the
// market's receipts in Redis: history.CheckSales), no 5xx but the
// documented 503s, and none outside a fault but those that say the
// service gave up in time (contended, timeout: a speed outcome, counted and
// logged), the service's audit clean (GET /api/audit, from Redis state
// alone), and, on runs of 5 minutes or more, the service's resident memory
// flat: sampled every 2 s, its median over the last third of the run after
// warm-up within 10% of its median over the first third. Warm-up is the
// first round of the three faults: the service's memory rises during it
// and settles after it. A fault lasts from
// just before it is injected until the service is seen healthy again;
// nothing else is judged by the clock. go test runs it for 24 s; the
// environment sets a longer run:
//
//	LOCKMARKET_SOAK_DURATION=10m go test -run 'TestSoak$' -v -count=1 -timeout 30m ./cmd/market/
//
// LOCKMARKET_SOAK_FAULT_EVERY sets the interval between faults (default a
// quarter of the run, at most 30 s), LOCKMARKET_SOAK_CLIENTS the number of
// clients (default 200), LOCKMARKET_SOAK_STRATEGY the service's strategy
// (default fine, the service's own default); LOCKMARKET_SOAK_ATTACKERS=1
// adds 6 attackers of the explorer's sandboxes from two addresses
// (soakattack_test.go), none of whose answers may be a 5xx.

// Figures of the soak.
const (
	soakStall     = 4 * time.Second // longer than the service's Redis read timeout (3 s)
	soakKillFor   = 2 * time.Second // how long client connections are killed, every soakKillEvery
	soakKillEvery = 20 * time.Millisecond
	// soakLongRun is the least duration whose memory growth is checked:
	// in a short run the service's memory has not settled.
	soakLongRun = 5 * time.Minute
	// soakMaxGrowth is the largest growth of the service's resident
	// memory allowed from warm-up to the end of a long run.
	soakMaxGrowth = 0.10
)

// documented503 are the codes of the 503s the README documents. Every
// other 5xx is a failure.
var documented503 = []string{
	"redis_unavailable", "outcome_unknown", "contended", "timeout", "lock_lost",
	"redis_oom", "redis_busy", "redis_loading", "redis_readonly", "redis_masterdown",
	"redis_tryagain", "redis_clusterdown", "redis_misconf", "redis_noreplicas", "redis_error",
}

// gaveUpCodes are the 503 codes of an operation that ran out of time or
// of lease, wherever they fall: the machine's speed, not a fault's.
var gaveUpCodes = []string{httpapi.CodeContended, httpapi.CodeTimeout, httpapi.CodeLockLost}

// openCodes are the 503 codes that leave the outcome open: the operation
// may have been applied.
var openCodes = []string{"outcome_unknown", "redis_error"}

func TestSoak(t *testing.T) {
	redistest.SkipShort(t, redistest.NeedServer)
	redistest.RequireServer(t)
	duration := loadEnvDuration(t, "LOCKMARKET_SOAK_DURATION", 24*time.Second)
	every := loadEnvDuration(t, "LOCKMARKET_SOAK_FAULT_EVERY", min(30*time.Second, duration/4))
	spec := soakSpec{
		strategy: os.Getenv("LOCKMARKET_SOAK_STRATEGY"),
		clients:  loadEnvInt(t, "LOCKMARKET_SOAK_CLIENTS", 200, 5000),
		duration: duration,
		every:    every,
	}
	if spec.strategy == "" {
		spec.strategy = "fine"
	}
	res := runSoak(t, spec)
	t.Log(res.summary(spec))
	t.Log(memoryTable(res.memory, spec.every))
	if res.faults != res.planned {
		t.Errorf("%d faults injected, %d planned", res.faults, res.planned)
	}
	if res.nUnexpected > 0 {
		t.Errorf("%d unexpected answers, first: %q", res.nUnexpected, res.unexpected)
	}
	if res.audit.Total != 0 {
		t.Errorf("audit: %+v %q", res.audit.Violations, res.audit.Details)
	}
	if soakAttacking() {
		t.Logf("attackers' answers by status: %v", res.attacks)
		if len(res.attackFails) > 0 || len(res.attacks) == 0 {
			t.Errorf("the attackers: %d answers 5xx or none (%v), first: %q", len(res.attackFails), res.attacks,
				res.attackFails)
		}
	}
	if res.explorations["found"] == 0 {
		t.Errorf("no explorer session found its counterexample beside the clients: %v", res.explorations)
	}
	// A rush meets the faults (a stalled, cut off or restarted Redis) at
	// whatever point of its run the machine's speed puts it: it ends done,
	// failed (its market's Redis went away under it), or stopped at the
	// time bound the service sets it. Which one depends on that speed, so
	// any end counts as a rush that ran beside the clients; one that never
	// started, or never ended, does not.
	ended := res.rushes["done"] + res.rushes["failed"] + res.rushes["cancelled"]
	if ended == 0 {
		t.Errorf("no rush ran beside the clients to an end: %v", res.rushes)
	}
	s := res.sales
	if s.Ok == 0 {
		t.Errorf("no purchase acknowledged")
	}
	if s.Lost != 0 || s.Duplicated != 0 || s.RefusedApplied != 0 {
		t.Errorf("purchases: %d lost, %d applied twice, %d refused though applied: %q",
			s.Lost, s.Duplicated, s.RefusedApplied, s.Details)
	}
	if spec.duration >= soakLongRun {
		if growth := float64(res.rssEnd-res.rssStart) / float64(res.rssStart); growth > soakMaxGrowth {
			t.Errorf("service memory grew %.1f%% (%d kB -> %d kB), more than %.0f%%",
				100*growth, res.rssStart, res.rssEnd, 100*soakMaxGrowth)
		}
	}
}

// soakSpec is one soak run.
type soakSpec struct {
	strategy string
	clients  int
	duration time.Duration
	every    time.Duration
}

// soakResult is what a soak measured.
type soakResult struct {
	requests int
	byStatus map[int]int
	// byError counts the 5xx and transport errors (status 0) by "STATUS
	// code"; inFault those during a fault, gaveUp the 503 contended and
	// timeout outside one (a speed outcome); unexpected are the first of
	// the others, nUnexpected how many.
	byError         map[string]int
	inFault, gaveUp int
	unexpected      []string
	nUnexpected     int
	elapsed         time.Duration
	// faults counts the faults injected, planned those that fit the run.
	faults, planned int
	// Operations (listings and purchases) whose answer left the outcome
	// open and that were sent again with their key until settled
	// (retried), and those whose settling answer said an earlier attempt
	// had applied (replayed). notApplied counts operations sent again
	// after a 503 that said nothing was applied.
	retried, replayed, notApplied int
	// memory is the service's memory, sampled every memEvery; rssStart
	// and rssEnd are the medians of its resident memory (kB) over the
	// first and the last third of the run after warm-up (see rssFigures);
	// rssMax the largest sample.
	memory                   []memSample
	rssStart, rssEnd, rssMax int64
	sales                    history.SalesReport
	audit                    auditBody
	// rushes counts the rushes run beside the clients by final state
	// (done, cancelled, failed: a fault can fail one), and by the status
	// of a start that was refused.
	rushes map[string]int
	// explorations counts the explorer sessions stepped beside the
	// clients, by outcome.
	explorations map[string]int
	// attacks counts the answers to the attackers of the sandboxes, by
	// status (with LOCKMARKET_SOAK_ATTACKERS=1); attackFails are their 5xx
	// and transport errors.
	attacks     map[string]int
	attackFails []string
}

func (r soakResult) summary(spec soakSpec) string {
	codes := make([]string, 0, len(r.byError))
	for c := range r.byError {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	var b strings.Builder
	for _, c := range codes {
		fmt.Fprintf(&b, " %q:%d", c, r.byError[c])
	}
	return fmt.Sprintf("soak: strategy=%s clients=%d duration=%v fault_every=%v faults=%d requests=%d rps=%.0f "+
		"purchases=%d acknowledged=%d refused=%d receipts=%d lost=%d applied_twice=%d refused_applied=%d "+
		"retried_unknown=%d replayed=%d retried_not_applied=%d audit=%d rss_start_kb=%d rss_end_kb=%d "+
		"rss_max_kb=%d errors_in_faults=%d gave_up_503=%d unexpected=%d rushes=%v explorations=%v errors:%s",
		spec.strategy, spec.clients, spec.duration, spec.every, r.faults, r.requests, float64(r.requests)/r.elapsed.Seconds(),
		r.sales.Attempted, r.sales.Ok, r.sales.Failed, r.sales.Receipts, r.sales.Lost, r.sales.Duplicated,
		r.sales.RefusedApplied, r.retried, r.replayed, r.notApplied, r.audit.Total, r.rssStart, r.rssEnd,
		r.rssMax, r.inFault, r.gaveUp, r.nUnexpected, r.rushes, r.explorations, b.String())
}

// service is the market service running as a child process.
type service struct {
	cmd  *exec.Cmd
	done chan error
	logs *loadLog
}

// startService runs this test binary as the service (see TestMain).
func startService(t *testing.T, args ...string) *service {
	t.Helper()
	s := &service{cmd: exec.Command(os.Args[0], args...), done: make(chan error, 1), logs: &loadLog{max: 64 << 10}}
	s.cmd.Env = append(os.Environ(), serviceEnv+"=1")
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	// The service dies with the test, whatever happens to the test.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start the service: %v", err)
	}
	go func() { s.done <- s.cmd.Wait() }()
	return s
}

// stop shuts the service down gracefully (SIGTERM) and reports how it
// ended. It sets no deadline: the test's -timeout is the bound.
func (s *service) stop() error {
	s.cmd.Process.Signal(syscall.SIGTERM)
	return <-s.done
}

// rss is the service's resident memory in kB (VmRSS).
func (s *service) rss() (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", s.cmd.Process.Pid)
}

func runSoak(t *testing.T, spec soakSpec) soakResult {
	t.Helper()
	b := redistest.Real(t, "--appendonly", "yes", "--appendfsync", "always")
	port, err := redisserver.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	const name = "soak"
	svc := startService(t, "-addr", addr, "-redis", b.Addr(), "-strategy", spec.strategy, "-name", name)
	stopped := false
	defer func() {
		if !stopped {
			svc.stop()
		}
	}()
	base := "http://" + addr
	// No client timeout: the service bounds every operation itself.
	hc := &http.Client{
		Transport: &http.Transport{MaxIdleConns: spec.clients, MaxIdleConnsPerHost: spec.clients, IdleConnTimeout: time.Minute},
	}
	defer hc.CloseIdleConnections()
	waitHealth(t, hc, base, http.StatusOK, svc.done)

	l := &loader{hc: hc, base: base, rec: history.NewRecorder(), setup: history.NewSetup()}
	probeKeys(t, l)
	workers := make([]*soakWorker, spec.clients)
	for i := range workers {
		workers[i] = &soakWorker{loadWorker: &loadWorker{l: l, id: i, user: fmt.Sprintf("k%04d", i), rng: rand.New(rand.NewPCG(uint64(i), 13))}}
	}
	wg := startClients(t, l, spec.duration, workers)

	var res soakResult
	samples := make(chan []memSample, 1)
	stopSampling := make(chan struct{})
	// INFO on a client of its own that gives up quickly, so that a
	// stalled server delays no sample for long.
	info := redis.NewClient(&redis.Options{Addr: b.Addr(), MaxRetries: -1,
		DialTimeout: 500 * time.Millisecond, ReadTimeout: 500 * time.Millisecond})
	defer info.Close()
	go func() { samples <- sampleMemory(svc, l, info, stopSampling) }()
	rushes := make(chan map[string]int, 1)
	go func() { rushes <- soakRushes(l) }()
	explorations := make(chan map[string]int, 1)
	go func() { explorations <- soakExplorer(l) }()
	type attacked struct {
		counts map[string]int
		fails  []string
	}
	attacks := make(chan attacked, 1)
	go func() {
		var a attacked
		if soakAttacking() {
			a.counts, a.fails = soakAttackers(l)
		}
		attacks <- a
	}()
	var windows []outage
	res.faults, res.planned, windows = injectFaults(t, l, b, spec, svc)
	time.Sleep(time.Until(l.deadline))
	res.rushes = <-rushes
	res.explorations = <-explorations
	a := <-attacks
	res.attacks, res.attackFails = a.counts, a.fails
	close(stopSampling)
	res.memory = <-samples
	if len(res.memory) == 0 {
		t.Errorf("no sample of the service's memory")
	}
	res.rssStart, res.rssEnd, res.rssMax = rssFigures(res.memory, spec)
	wg.Wait()
	res.elapsed = time.Since(l.t0)

	res.byStatus, res.byError = map[int]int{}, map[string]int{}
	for _, w := range workers {
		res.requests += w.requests
		for c, n := range w.byStatus {
			res.byStatus[c] += n
		}
		for _, e := range w.errs {
			res.judge(e, windows)
		}
		for _, b := range w.broken {
			res.unexpect(b)
		}
		res.retried += w.retried
		res.replayed += w.replayed
		res.notApplied += w.notApplied
	}
	waitHealth(t, hc, base, http.StatusOK, svc.done)
	if err := soakAudit(l, &res.audit); err != nil {
		t.Fatalf("audit: %v", err)
	}
	receipts, err := history.ReadSales(context.Background(), b.Client, name)
	if err != nil {
		t.Fatal(err)
	}
	res.sales = history.CheckSales(l.rec.Ops(), receipts)
	stopped = true
	if err := svc.stop(); err != nil {
		t.Errorf("service: %v; log: %s", err, svc.logs.String())
	}
	return res
}

// soakRushes runs one short rush after another until the run's deadline
// (each 2 s, 20 buyers, under lua then fine, so that the served market
// keeps most of the machine) and counts them by final state, and by state
// and the start of their error (the strategy that failed, or that the
// rush was stopped at its time bound).
func soakRushes(l *loader) map[string]int {
	counts := map[string]int{}
	w := &loadWorker{l: l, id: -1, user: "rush"}
	for time.Until(l.deadline) > 5*time.Second {
		st, code, _ := w.call("POST", "/api/rush", map[string]any{"buyers": 20, "listers": 2, "duration_ms": 2000,
			"strategies": []string{"lua", "fine"}})
		if st != http.StatusAccepted {
			counts[fmt.Sprintf("start_%d_%s", st, code)]++
			time.Sleep(time.Second)
			continue
		}
		for {
			time.Sleep(250 * time.Millisecond)
			var rs struct {
				State string `json:"state"`
				Error string `json:"error"`
			}
			if err := l.getJSON(l.base+"/api/rush", &rs); err != nil || rs.State == "running" {
				continue
			}
			counts[rs.State]++
			if rs.Error != "" {
				why, _, _ := strings.Cut(rs.Error, ":")
				counts[rs.State+" ("+why+")"]++
			}
			break
		}
	}
	return counts
}

// soakExplorer steps explorer sessions of the lab one after another until
// the run's deadline, about one a second, as a class would: recipe 1, a few enabled actions
// taken in turn, one undone, then a search for a bug from there, and the
// session deleted. It counts sessions by outcome: "found" when the search
// answered a counterexample, else the status and code that stopped it.
func soakExplorer(l *loader) map[string]int {
	counts := map[string]int{}
	w := &loadWorker{l: l, id: -2, user: "explorer"}
	type state struct {
		Enabled []json.RawMessage `json:"enabled"`
	}
	stopped := func(st int, code string) {
		counts[fmt.Sprintf("%d %s", st, code)]++
		time.Sleep(time.Second)
	}
	for time.Until(l.deadline) > 5*time.Second {
		st, code, body := w.call("POST", "/api/explore/sessions", map[string]any{"recipe": "1"})
		if st != http.StatusCreated {
			stopped(st, code)
			continue
		}
		var s struct {
			ID    string `json:"id"`
			State state  `json:"state"`
		}
		if err := json.Unmarshal(body, &s); err != nil || s.ID == "" {
			counts["bad answer"]++
			continue
		}
		path := "/api/explore/sessions/" + s.ID
		ok := true
		for i := 0; i < 4 && ok && len(s.State.Enabled) > 0; i++ {
			var next state
			st, code, body = w.call("POST", path+"/steps", s.State.Enabled[0])
			if ok = st == http.StatusOK && json.Unmarshal(body, &next) == nil; ok {
				s.State = next
			}
		}
		if ok {
			st, code, _ = w.call("POST", path+"/undo", map[string]any{})
			ok = st == http.StatusOK
		}
		// The search runs as a job: 202 at once, then its state is read
		// from the session until it ends.
		var found struct {
			Find struct {
				State string `json:"state"`
			} `json:"find"`
		}
		if ok {
			st, code, _ = w.call("POST", path+"/find", map[string]any{})
			ok = st == http.StatusAccepted
		}
		for ok && time.Until(l.deadline) > 0 {
			st, code, body = w.call("GET", path, nil)
			if ok = st == http.StatusOK && json.Unmarshal(body, &found) == nil; !ok {
				break
			}
			if s := found.Find.State; s != "running" && s != "waiting" {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		switch {
		case ok && found.Find.State == "found":
			counts["found"]++
		case ok:
			counts["searched, nothing found"]++
		default:
			stopped(st, code)
		}
		w.call("DELETE", path, nil)
		time.Sleep(time.Second) // a class thinks between sessions
	}
	return counts
}

// judge counts one 5xx or transport error: a documented 503, or a
// transport error, during a fault is expected; a 503 that says the service
// gave up in time (contended, timeout) is a speed outcome wherever it
// falls, as is a lease run out before a fenced commit (lock_lost);
// anything else is unexpected.
func (r *soakResult) judge(e loadError, windows []outage) {
	r.byError[fmt.Sprintf("%d %s", e.status, e.code)]++
	documented := e.status == http.StatusServiceUnavailable && slices.Contains(documented503, e.code)
	inFault := slices.ContainsFunc(windows, func(o outage) bool { return e.start.Before(o.to) && e.end.After(o.from) })
	switch {
	case inFault && (documented || e.status == 0):
		r.inFault++
	case e.status == http.StatusServiceUnavailable && slices.Contains(gaveUpCodes, e.code):
		r.gaveUp++
	default:
		r.unexpect(e.what)
	}
}

func (r *soakResult) unexpect(what string) {
	r.nUnexpected++
	if len(r.unexpected) < 5 {
		r.unexpected = append(r.unexpected, what)
	}
}

// outage is a fault's window: from just before it was injected until the
// service was seen healthy after it.
type outage struct{ from, to time.Time }

// probeKeys checks that the service honours Idempotency-Key (a repeat of
// a listing is answered as the first was): the clients count on it to
// settle unknown outcomes.
func probeKeys(t *testing.T, l *loader) {
	t.Helper()
	w := &loadWorker{l: l, user: "probe"}
	if st, code, body := w.call("POST", "/api/users", map[string]any{"id": "probe", "name": "Probe", "funds": 0}); st != http.StatusCreated {
		t.Fatalf("create the probe user: %d %s %s", st, code, body)
	}
	if st, code, body := w.call("POST", "/api/users/probe/inventory", map[string]any{"item": "probe-i"}); st != http.StatusCreated {
		t.Fatalf("grant the probe item: %d %s %s", st, code, body)
	}
	listing := map[string]any{"seller": "probe", "item": "probe-i", "price": 1}
	for attempt := range 2 {
		st, code, body := w.callKey("POST", "/api/listings", "probe-l", listing)
		if attempt == 0 && st != http.StatusCreated {
			t.Fatalf("list the probe item: %d %s %s", st, code, body)
		}
		if attempt == 1 && st != http.StatusCreated {
			t.Fatalf("the service does not honour Idempotency-Key (a repeat answered %d %s)", st, code)
		}
	}
	l.mu.Lock()
	l.setup.Funds["probe"] = 0
	l.setup.Owner["probe-i"] = "probe"
	l.mu.Unlock()
}

// injectFaults injects a fault every spec.every, in turn a stall, killed
// connections and a restart, as long as one fits before the end of the
// run. It returns how many it injected and planned, and the faults'
// windows.
func injectFaults(t *testing.T, l *loader, b *redistest.Backend, spec soakSpec, svc *service) (injected, planned int, windows []outage) {
	t.Helper()
	admin := redis.NewClient(&redis.Options{Addr: b.Addr(), MaxRetries: 3})
	defer admin.Close()
	ctx := context.Background()
	faults := []struct {
		name   string
		inject func() error
	}{
		{"stall", func() error {
			if err := b.Server.Signal(syscall.SIGSTOP); err != nil {
				return err
			}
			time.Sleep(soakStall)
			return b.Server.Signal(syscall.SIGCONT)
		}},
		{"client-kill", func() error {
			for end := time.Now().Add(soakKillFor); time.Now().Before(end); time.Sleep(soakKillEvery) {
				if err := admin.ClientKillByFilter(ctx, "TYPE", "normal", "SKIPME", "yes").Err(); err != nil {
					return err
				}
			}
			return nil
		}},
		{"restart", func() error {
			b.Server.Kill()
			return b.Server.Restart(ctx)
		}},
	}
	const longest = soakStall + time.Second
	for k := 1; l.t0.Add(time.Duration(k)*spec.every + longest).Before(l.deadline); k++ {
		planned++
		time.Sleep(time.Until(l.t0.Add(time.Duration(k) * spec.every)))
		f := faults[(k-1)%len(faults)]
		from := time.Now()
		if err := f.inject(); err != nil {
			t.Errorf("fault %s: %v", f.name, err)
		}
		waitHealth(t, l.hc, l.base, http.StatusOK, svc.done)
		windows = append(windows, outage{from, time.Now()})
		injected++
	}
	return injected, planned, windows
}

// memEvery is how often the service's memory is sampled.
const memEvery = 2 * time.Second

// memSample is the service's memory at one moment of the run.
type memSample struct {
	at         time.Duration // since the load started
	rssKB      int64         // VmRSS
	heapInuse  float64       // go_memstats_heap_inuse_bytes of /metrics
	goroutines float64       // go_goroutines of /metrics
	clients    int64         // connected_clients of Redis (INFO), -1 if unknown
}

// sampleMemory samples the service's memory every memEvery until stop. A
// sample whose /metrics could not be read has no heap figures.
func sampleMemory(svc *service, l *loader, rdb *redis.Client, stop <-chan struct{}) []memSample {
	var out []memSample
	tick := time.NewTicker(memEvery)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return out
		case <-tick.C:
		}
		kb, err := svc.rss()
		if err != nil {
			continue
		}
		m := memSample{at: time.Since(l.t0), rssKB: kb, clients: -1}
		m.heapInuse, m.goroutines = serviceMetrics(l)
		if info, err := rdb.Info(context.Background(), "clients").Result(); err == nil {
			m.clients = infoInt(info, "connected_clients")
		}
		out = append(out, m)
	}
}

// serviceMetrics reads the service's heap in use and goroutines from its
// /metrics, or zeros.
func serviceMetrics(l *loader) (heapInuse, goroutines float64) {
	resp, err := l.hc.Get(l.base + "/metrics")
	if err != nil {
		return 0, 0
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		switch name {
		case "go_memstats_heap_inuse_bytes":
			heapInuse, _ = strconv.ParseFloat(v, 64)
		case "go_goroutines":
			goroutines, _ = strconv.ParseFloat(v, 64)
		}
	}
	return heapInuse, goroutines
}

// infoInt is the integer field name of an INFO reply, or -1.
func infoInt(info, name string) int64 {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}

// soakWarmUp is the warm-up of a run: the first round of the three
// faults.
func soakWarmUp(spec soakSpec) time.Duration { return 3 * spec.every }

// rssFigures are the medians of the resident memory over the first and
// the last third of the run after warm-up, and the largest sample. A third
// without a sample takes the nearest one.
func rssFigures(ms []memSample, spec soakSpec) (start, end, most int64) {
	if len(ms) == 0 {
		return 0, 0, 0
	}
	median := func(from, to time.Duration) int64 {
		var in []int64
		for _, m := range ms {
			if m.at >= from && m.at < to {
				in = append(in, m.rssKB)
			}
		}
		if len(in) == 0 {
			i, _ := slices.BinarySearchFunc(ms, from, func(m memSample, d time.Duration) int { return cmp.Compare(m.at, d) })
			return ms[min(i, len(ms)-1)].rssKB
		}
		slices.Sort(in)
		return in[len(in)/2]
	}
	for _, m := range ms {
		most = max(most, m.rssKB)
	}
	warm := min(soakWarmUp(spec), spec.duration)
	third := (spec.duration - warm) / 3
	return median(warm, warm+third), median(spec.duration-third, spec.duration), most
}

// memoryTable is a line per fault interval: the median of the samples in
// it.
func memoryTable(ms []memSample, every time.Duration) string {
	var b strings.Builder
	b.WriteString("memory (median per interval): at_s rss_kb heap_inuse_kb goroutines redis_clients")
	for from := time.Duration(0); len(ms) > 0; from += every {
		var in []memSample
		for len(ms) > 0 && ms[0].at < from+every {
			in = append(in, ms[0])
			ms = ms[1:]
		}
		if len(in) == 0 {
			continue
		}
		slices.SortFunc(in, func(a, b memSample) int { return cmp.Compare(a.rssKB, b.rssKB) })
		m := in[len(in)/2]
		fmt.Fprintf(&b, "\n  %5.0f %7d %9.0f %5.0f %5d", from.Seconds(), m.rssKB, m.heapInuse/1024, m.goroutines, m.clients)
	}
	return b.String()
}

// soakAudit asks the service for its audit, again after a second while it
// answers 429 audit_busy or a 503.
func soakAudit(l *loader, out *auditBody) error {
	for {
		resp, err := l.hc.Get(l.base + "/api/audit")
		if err != nil {
			return err
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case err != nil:
			return err
		case resp.StatusCode == http.StatusOK:
			return json.Unmarshal(data, out)
		case resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable:
			return fmt.Errorf("GET /api/audit: %d %s", resp.StatusCode, data)
		}
		time.Sleep(time.Second)
	}
}

// soakWorker is one soak client: a load client whose listings and
// purchases carry an Idempotency-Key and are sent again until answered.
type soakWorker struct {
	*loadWorker
	n                             int // operations sent, numbering their keys
	retried, replayed, notApplied int
}

// prepare creates the worker's user and three items it lists.
func (w *soakWorker) prepare() error {
	if st, code, body := w.call("POST", "/api/users", map[string]any{"id": w.user, "name": "Soak " + w.user, "funds": loadFunds}); st != http.StatusCreated {
		return fmt.Errorf("create user: %d %s %s", st, code, body)
	}
	w.l.mu.Lock()
	w.l.setup.Funds[w.user] = loadFunds
	w.l.mu.Unlock()
	for range 3 {
		w.listNew()
	}
	return nil
}

// send sends one listing or purchase with a new Idempotency-Key and, while
// the answer leaves it unsettled (no answer, or a 5xx), sends it again with
// the same key a second later (the Retry-After of a 503), until it is
// settled. An answer that leaves the outcome open (no answer, 503
// outcome_unknown or redis_error) marks op retried. It returns the
// settling answer.
func (w *soakWorker) send(op *history.Pending, path string, body any) (int, string) {
	key := fmt.Sprintf("%s-%d", w.user, w.n)
	w.n++
	st, code, data := w.callKey("POST", path, key, body)
	open := false
	for n := 0; unsettled(st); n++ {
		switch {
		case st == 0 || slices.Contains(openCodes, code):
			if !open {
				open = true
				op.Retry()
				w.retried++
			}
		case n == 0:
			w.notApplied++
		}
		time.Sleep(time.Second)
		st, code, data = w.callKey("POST", path, key, body)
	}
	if open {
		var r struct {
			Replayed bool `json:"replayed"`
		}
		if json.Unmarshal(data, &r) == nil && r.Replayed {
			w.replayed++
		}
	}
	return st, code
}

// unsettled reports whether an answer leaves an operation to be sent
// again: no answer, or a 5xx.
func unsettled(status int) bool { return status == 0 || status >= 500 }

// listNew grants the worker a new item and lists it.
func (w *soakWorker) listNew() {
	item := fmt.Sprintf("%s-i%d", w.user, w.next)
	w.next++
	st, code, _ := w.call("POST", "/api/users/"+w.user+"/inventory", map[string]any{"item": item})
	if st != http.StatusCreated {
		if code == "already_exists" {
			w.resent++ // cannot happen: the service's client never resends
		}
		return // a grant has no key: try another item later
	}
	w.l.mu.Lock()
	w.l.setup.Owner[item] = w.user
	w.l.mu.Unlock()
	price := 1 + w.rng.Int64N(1000)
	op := w.l.rec.Invoke(w.id, history.List, "", w.user, item, price)
	st, code = w.send(op, "/api/listings", map[string]any{"seller": w.user, "item": item, "price": price})
	loadComplete(op, st, code)
}

// loop mixes operations until the deadline, as the load test does: 15% new
// listings, 50% purchases (each after reading the market), 35% reads.
func (w *soakWorker) loop() {
	for time.Now().Before(w.l.deadline) {
		switch r := w.rng.Float64(); {
		case r < 0.15:
			w.listNew()
		case r < 0.65:
			st, _, body := w.call("GET", "/api/market?limit=20", nil)
			if st != http.StatusOK {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			var page loadPage
			if err := json.Unmarshal(body, &page); err != nil {
				w.broken = append(w.broken, "market page: "+err.Error())
				return
			}
			var others []int
			for i, l := range page.Listings {
				if l.Seller != w.user {
					others = append(others, i)
				}
			}
			if len(others) == 0 {
				continue
			}
			l := page.Listings[others[w.rng.IntN(len(others))]]
			op := w.l.rec.Invoke(w.id, history.Purchase, w.user, l.Seller, l.Item, l.Price)
			st, code := w.send(op, "/api/purchases", map[string]any{"buyer": w.user, "seller": l.Seller, "item": l.Item, "price": l.Price})
			loadComplete(op, st, code)
		case r < 0.85:
			w.call("GET", "/api/users/"+w.user, nil)
		default:
			w.call("GET", fmt.Sprintf("/api/market?offset=%d&limit=50", w.rng.IntN(100)), nil)
		}
	}
}
