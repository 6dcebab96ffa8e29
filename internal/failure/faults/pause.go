package faults

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/lockmarket/lockmarket/internal/failure/history"
	"github.com/lockmarket/lockmarket/internal/failure/pausedholder"
	"github.com/lockmarket/lockmarket/internal/timeline"
	"github.com/lockmarket/lockmarket/locking"
	"github.com/lockmarket/lockmarket/market"
)

// The pause trials are the paused-holder scenario (package pausedholder)
// in real time: seller lists the relic; alice starts buying it and stops
// at her commit point while her lease runs out (the trial waits cfg.Pause,
// longer than the lock TTL); meanwhile bob buys the same listing; then
// alice goes on and commits. Correct strategies let exactly one of them
// buy it.
var pauseCast = pausedholder.Cast{Seller: "seller", Holder: "alice", Rival: "bob", Item: "relic", Price: 100}

// runPause runs the trials of a pause fault: alice held by a hook in this
// process (Pause), or a child process of cfg.ClientCommand stopped by
// SIGSTOP (PauseProcess). With trace, the first trial's steps are recorded
// and its timeline left there.
func runPause(ctx context.Context, f Fault, v Variant, cfg Config, trace *timeline.Timeline) (Result, error) {
	var command func(context.Context, ...string) *execCmd
	if f == PauseProcess {
		if cfg.ClientCommand == nil {
			return Result{}, fmt.Errorf("%w: %s needs Config.ClientCommand", ErrConfig, PauseProcess)
		}
		command = cfg.ClientCommand
	}
	srv, err := startServer(ctx)
	if err != nil {
		return Result{}, err
	}
	defer srv.Stop()
	res := Result{Fault: f, Variant: v}
	for trial := range cfg.Trials {
		if err := pauseTrial(ctx, srv.Addr(), v, cfg, trial, &res, command, trace); err != nil {
			return res, err
		}
		trace = nil
	}
	return res, nil
}

// pauseTrial runs one trial; when trace is not nil, every client's steps
// are recorded and the timeline is left there. alice is a goroutine held
// by a hook at her commit point (pausedholder.HookHolder), or, with a
// command, a child process stopped by SIGSTOP (processAlice).
func pauseTrial(ctx context.Context, addr string, v Variant, cfg Config, trial int, res *Result,
	command func(context.Context, ...string) *execCmd, trace *timeline.Timeline) error {
	name := marketName(res.Fault, trial)
	c := faultClient(addr, cfg, 8)
	defer c.Close()
	var rec *timeline.Recorder
	actx, bctx := ctx, ctx
	if trace != nil {
		c.AddHook(timeline.Hook{})
		rec = timeline.NewRecorder(market.NewKeys(name).Prefix())
		rec.Lanes(laneAlice, laneBob)
		actx, bctx = rec.As(ctx, laneAlice), rec.As(ctx, laneBob)
	}
	ledger := market.NewLedger()
	opts, s, err := marketOptions(v, cfg, c, market.WithLedger(ledger))
	if err != nil {
		return err
	}
	mb, err := market.New(c, name, opts...)
	if err != nil {
		return err
	}
	pc := pauseCast
	setup, err := populate(ctx, mb, pc.Funds(), map[string]string{pc.Item: pc.Seller})
	if err != nil {
		return err
	}
	hrec := history.NewRecorder()
	p := hrec.Invoke(0, history.List, "", pc.Seller, pc.Item, pc.Price)
	if _, err := mb.List(ctx, s, pc.Seller, pc.Item, pc.Price); p.Complete(err) != history.Ok {
		return fmt.Errorf("list: %w", err)
	}

	var a pausedholder.Holder
	if command == nil {
		// The same market: the pause rides in alice's context. She goes on
		// by herself a second after the lease ran out, since bob may be
		// waiting for this very lock (when a watchdog keeps renewing it).
		a = pausedholder.NewHookHolder(mb, s, pc,
			fmt.Sprintf("paused before its commit for %v (the goroutine is held)", cfg.Pause), cfg.Pause+time.Second)
	} else {
		args := []string{
			"-addr", addr, "-market", name, "-strategy", string(v),
			"-ttl", cfg.LockTTL.String(), "-read-timeout", cfg.ReadTimeout.String(),
		}
		if rec != nil {
			args = append(args, "-trace-start", strconv.FormatInt(rec.Start().UnixNano(), 10))
		}
		a = &processAlice{command: command, args: args, pause: cfg.Pause, rec: rec}
	}
	var costB market.Cost
	var errB error
	var outB history.Outcome
	pa := hrec.Invoke(1, history.Purchase, pc.Holder, pc.Seller, pc.Item, pc.Price)
	outA, err := pausedholder.Trial{
		Holder: a,
		Lapse:  func(ctx context.Context) error { return (locking.RealClock{}).Sleep(ctx, cfg.Pause) },
		Rival: func(context.Context) {
			pb := hrec.Invoke(2, history.Purchase, pc.Rival, pc.Seller, pc.Item, pc.Price)
			costB, errB = mb.Purchase(bctx, s, pc.Rival, pc.Seller, pc.Item, pc.Price)
			outB = pb.Complete(errB)
			if rec != nil {
				rec.Add(laneBob, timeline.Result, "purchase of %s: %s", pc.Item, describe(errB))
			}
		},
	}.Run(actx)
	if err != nil {
		return err
	}
	errA := outA.Err
	o, reason := classify(errA)
	pa.CompleteAs(o, reason, errA)
	if rec != nil {
		rec.Add(laneAlice, timeline.Result, "purchase of %s: %s", pc.Item, describe(errA))
	}
	if outA.LockLost {
		res.LockLost++
	}
	if costB.LockLost {
		res.LockLost++
	}
	hist, audit, err := check(ctx, addr, mb, setup, hrec.Ops())
	if err != nil {
		return err
	}
	counted := res.addTrial(hist, audit)
	if rec != nil {
		*trace = finishTrace(rec, res.Fault, v, hist, audit, counted)
	}
	fmt.Fprintf(cfg.Log, "%s %s trial %d: alice %s%s (lock lost %v), bob %s%s: audit %d, history %d violations\n",
		res.Fault, v, trial, o, errText(errA), outA.LockLost, outB, errText(errB), counted.Total(), hist.Anomalies.Total())
	return nil
}

// processAlice is a child process (ClientMain) stopped with SIGSTOP at its
// commit point (a pausedholder.Holder). It announces the commit point on
// stdout and waits for a line on stdin before committing: the parent
// stops it and writes that line (which the stopped process cannot read);
// the trial waits past the TTL and lets bob buy; Resume continues it. The whole process is frozen meanwhile, as in a
// long garbage-collection pause or a VM migration: no goroutine of it, no
// lease watchdog, runs.
type processAlice struct {
	command func(context.Context, ...string) *execCmd
	args    []string
	pause   time.Duration

	cmd    *execCmd
	stdin  io.WriteCloser
	lines  chan string
	stderr bytes.Buffer
	rec    *timeline.Recorder // nil unless traced
}

// clientReport is the child's last line.
type clientReport struct {
	Outcome  history.Outcome `json:"outcome"`
	Reason   history.Reason  `json:"reason"`
	LockLost bool            `json:"lock_lost"`
	Err      string          `json:"err"`
	// Description is describe(err), made where err's type is known.
	Description string `json:"description,omitempty"`
	// Events are the child's recorded steps, when traced.
	Events []timeline.Event `json:"events,omitempty"`
}

const atCommit = "at-commit"

// Start runs the child and returns once it is stopped at its commit point.
func (a *processAlice) Start(ctx context.Context) error {
	a.cmd = a.command(ctx, a.args...)
	setDeathSignal(a.cmd)
	a.cmd.Stderr = &a.stderr
	var err error
	if a.stdin, err = a.cmd.StdinPipe(); err != nil {
		return err
	}
	stdout, err := a.cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := a.cmd.Start(); err != nil {
		return fmt.Errorf("start client process: %w", err)
	}
	a.lines = make(chan string, 4)
	go func() {
		defer close(a.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 64<<10), 8<<20) // a traced report carries its events
		for sc.Scan() {
			a.lines <- sc.Text()
		}
	}()
	line, err := a.next(ctx)
	if err != nil {
		return err
	}
	if line != atCommit {
		return a.fail(fmt.Errorf("client process said %q, want %q", line, atCommit))
	}
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return a.fail(err)
	}
	if a.rec != nil {
		a.rec.Add(laneAlice, timeline.PauseStart, "SIGSTOP before its commit: the whole process frozen for %v", a.pause)
	}
	// The stop reaches the child's threads one after another: only once
	// all are stopped can the line be written without the child reading
	// it first.
	if err := waitStopped(ctx, a.cmd.Process.Pid); err != nil {
		return a.fail(err)
	}
	if _, err := io.WriteString(a.stdin, "go\n"); err != nil {
		return a.fail(err)
	}
	return nil
}

func (a *processAlice) next(ctx context.Context) (string, error) {
	select {
	case line, ok := <-a.lines:
		if !ok {
			return "", a.fail(errors.New("client process ended early"))
		}
		return line, nil
	case <-time.After(15 * time.Second):
		return "", a.fail(errors.New("client process silent for 15s"))
	case <-ctx.Done():
		return "", a.fail(ctx.Err())
	}
}

// fail kills the child and returns err with its stderr.
func (a *processAlice) fail(err error) error {
	a.cmd.Process.Signal(syscall.SIGCONT)
	a.cmd.Process.Kill()
	for range a.lines {
	}
	a.cmd.Wait()
	return fmt.Errorf("pause-process: %w (stderr: %q)", err, a.stderr.String())
}

// Resume continues the child and returns the outcome it reports; an
// error it reports keeps the outcome the child classified it as
// (reportedErr).
func (a *processAlice) Resume(ctx context.Context) (pausedholder.Outcome, error) {
	if a.rec != nil {
		a.rec.Add(laneAlice, timeline.PauseEnd, "SIGCONT: goes on")
	}
	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		return pausedholder.Outcome{}, a.fail(err)
	}
	line, err := a.next(ctx)
	if err != nil {
		return pausedholder.Outcome{}, err
	}
	var rep clientReport
	if err := json.Unmarshal([]byte(line), &rep); err != nil {
		return pausedholder.Outcome{}, a.fail(fmt.Errorf("client report %q: %w", line, err))
	}
	a.stdin.Close()
	for range a.lines {
	}
	if a.rec != nil {
		a.rec.Merge(rep.Events)
	}
	if err := a.cmd.Wait(); err != nil {
		return pausedholder.Outcome{}, fmt.Errorf("client process: %w (stderr: %q)", err, a.stderr.String())
	}
	out := pausedholder.Outcome{LockLost: rep.LockLost}
	if rep.Err != "" {
		out.Err = reportedErr{text: rep.Err, description: rep.Description, outcome: rep.Outcome, reason: rep.Reason}
	}
	return out, nil
}

// classify is history.Classify, except that an error a client process
// reported keeps the outcome the process gave it, where its type was
// known.
func classify(err error) (history.Outcome, history.Reason) {
	var r reportedErr
	if errors.As(err, &r) {
		return r.outcome, r.reason
	}
	return history.Classify(err)
}

// ClientMain is the pausable client process of the pause-process fault:
// alice buying the pause trial's listing with the given flags. At her
// commit point it prints "at-commit" and waits for a line on stdin; at the
// end it prints a JSON report of the outcome. It returns the process's
// exit code.
func ClientMain(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("faults-client", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "", "redis-server host:port")
	name := fs.String("market", "", "market name")
	variant := fs.String("strategy", "", "strategy, with +fencing for a fenced lock")
	ttl := fs.Duration("ttl", 200*time.Millisecond, "lock TTL")
	readTimeout := fs.Duration("read-timeout", 300*time.Millisecond, "client read timeout")
	traceStart := fs.Int64("trace-start", 0, "record the steps, from this start (Unix nanoseconds); 0: do not")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg := Config{LockTTL: *ttl, ReadTimeout: *readTimeout}.withDefaults()
	c := faultClient(*addr, cfg, 4)
	defer c.Close()
	var rec *timeline.Recorder
	if *traceStart != 0 {
		c.AddHook(timeline.Hook{})
		rec = timeline.NewRecorderAt(market.NewKeys(*name).Prefix(), time.Unix(0, *traceStart))
		ctx = rec.As(ctx, laneAlice)
	}
	in := bufio.NewReader(stdin)
	var once sync.Once
	hook := func(ctx context.Context, _, op string) {
		if op != "purchase" {
			return
		}
		once.Do(func() {
			fmt.Fprintln(stdout, atCommit)
			in.ReadString('\n')
		})
	}
	opts, s, err := marketOptions(Variant(*variant), cfg, c)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	m, err := market.New(c, *name, opts...)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	pc := pauseCast
	cost, err := m.Purchase(pausedholder.WithBeforeCommit(ctx, hook), s, pc.Holder, pc.Seller, pc.Item, pc.Price)
	o, r := history.Classify(err)
	rep := clientReport{Outcome: o, Reason: r, LockLost: cost.LockLost}
	if err != nil {
		rep.Err, rep.Description = err.Error(), describe(err)
	}
	if rec != nil {
		rep.Events = rec.Raw()
	}
	json.NewEncoder(stdout).Encode(rep)
	return 0
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return " [" + err.Error() + "]"
}

// waitStopped waits until every thread of process pid is in the stopped
// state ("T" in /proc/PID/task/TID/stat), for at most 5 s.
func waitStopped(ctx context.Context, pid int) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		all, err := allStopped(pid)
		if err != nil {
			return err
		}
		if all {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("process %d did not stop within 5s", pid)
		}
		if err := (locking.RealClock{}).Sleep(ctx, time.Millisecond); err != nil {
			return err
		}
	}
}

func allStopped(pid int) (bool, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return false, err
	}
	for _, t := range tasks {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, t.Name()))
		if err != nil {
			return false, err
		}
		// The state follows the command name, which is in parentheses.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 || i+2 >= len(stat) {
			return false, fmt.Errorf("unexpected /proc stat %q", stat)
		}
		if state := stat[i+2]; state != 'T' && state != 't' {
			return false, nil
		}
	}
	return true, nil
}
