package exploresession

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sys/unix"

	"github.com/lockmarket/lockmarket/internal/redis/redisserver"
	"github.com/lockmarket/lockmarket/internal/service/api"
)

// Bounds of a sandbox: the redis-server that runs one session's pasted
// Lua, and nothing else. Its Lua is Redis's own (no files, no processes,
// globals read-only); its only user may not run the commands that change
// the server or reach another one (see sandboxConfinement); and the service
// stops a script that runs past its step's budget.
const (
	// SandboxMaxMemory is the sandbox's maxmemory (noeviction): the keys a
	// script may write.
	SandboxMaxMemory = 8 << 20
	// SandboxHeap is how far the sandbox's address space may grow past
	// what it holds once started: Lua's heap, which maxmemory does not
	// count, is within it. An allocation past it fails ("not enough
	// memory"), and the script with it.
	SandboxHeap = 64 << 20
	// DefaultStepBudget bounds a step of a session of pasted Lua: the
	// CPU time its sandbox spends on the replay of its schedule, every
	// script included; and each script of a search. It counts the
	// sandbox's CPU time, not the wall's, so that a busy machine, which
	// runs each sandbox slower, blames no honest step.
	DefaultStepBudget = 2 * time.Second
	// scriptWallFactor bounds a script's wall time too, at this many
	// times the budget, counted while the sandbox is seen busy with it: a
	// script that spins on a machine so busy that its sandbox gets little
	// of a CPU is stopped all the same. A step whose scripts end quickly
	// (an honest lock's) is never busy, however long the busy machine
	// makes the step; the bound stays under the explorer's own wait for a
	// client that neither sends nor ends (10 s).
	scriptWallFactor = 4
	// stepWallFactor bounds a whole step's wall time, at this many times
	// its budget: the last resort, for a machine too busy to step at all.
	// With the explorer's queue (10 s at most) it stays under the HTTP
	// server's write timeout (30 s in cmd/market), so that the step is
	// answered rather than cut off.
	stepWallFactor = 8
	// killWait is how long a script has to end after SCRIPT KILL before
	// the server itself is killed.
	killWait = 500 * time.Millisecond
)

// ErrNoSandbox is returned for pasted Lua when no redis-server can be
// started to run it.
var ErrNoSandbox = errors.New("exploresession: no redis-server to run pasted Lua")

// sandboxConfinement confines a sandbox (redisserver.Confinement): a
// password for every connection, its data bounded, one database, no
// debug or module command, and a user without the commands that
// administer the server or touch another (@admin, @dangerous: CONFIG,
// SHUTDOWN, DEBUG, FLUSHALL, MIGRATE, CLIENT, ...), nor SELECT: Redis
// checks these inside scripts too; no core file, and SIGKILL when the
// service dies, however it dies.
var sandboxConfinement = redisserver.Confinement{MaxMemory: SandboxMaxMemory, Heap: SandboxHeap}

// sandboxArgs are the sandbox's arguments beside its confinement: a
// script is answered BUSY after 100 ms, so that SCRIPT KILL can stop it.
func sandboxArgs() []string { return []string{"--busy-reply-threshold", "100"} }

// sandbox is a redis-server started for one session, with a connection
// of the service's own to stop a script on it.
type sandbox struct {
	srv   *redisserver.Server
	admin *redis.Client

	mu sync.Mutex
	// cancel ends the operation running on the sandbox, if any.
	cancel context.CancelFunc
	// killed: the process was killed (a script past its bound, or
	// abort); it is restarted before the next operation unless aborted.
	killed, aborted bool
	// pending is an operation run left running after the kill.
	pending <-chan error
}

// startSandbox starts a sandbox from the redis-server bin (empty: the
// one on PATH).
func startSandbox(ctx context.Context, bin string) (*sandbox, error) {
	conf := sandboxConfinement
	srv, err := redisserver.Start(ctx, redisserver.Options{Binary: bin, Args: sandboxArgs(),
		Confine: &conf,
		// none of the service's environment (an admin token, say)
		Env: []string{}})
	if errors.Is(err, redisserver.ErrNoBinary) {
		return nil, fmt.Errorf("%w: %w: pasted Lua runs on a redis-server the service starts for each session "+
			"(never in the service itself); install redis-server on the service's machine "+
			"(e.g. apt-get install redis-server) and restart the service to enable it; the gallery's recipes "+
			"and the strategies work without it", ErrNoSandbox, api.ErrInvalid)
	}
	if err != nil {
		return nil, fmt.Errorf("exploresession: start a sandbox: %w", err)
	}
	if err := lowerPriority(srv.Pid()); err != nil {
		srv.Kill()
		srv.Stop()
		return nil, fmt.Errorf("exploresession: lower a sandbox's priority: %w", err)
	}
	admin := srv.AdminOptions()
	admin.Protocol, admin.DisableIdentity, admin.MaxRetries, admin.PoolSize = 2, true, -1, 1
	admin.DialTimeout, admin.ReadTimeout, admin.WriteTimeout = killWait, killWait, killWait
	return &sandbox{srv: srv, admin: redis.NewClient(admin)}, nil
}

// lowerPriority lowers the CPU priority of process pid to the least
// (nice 19): a script that spins until its budget takes the CPU the
// service and the served Redis leave.
func lowerPriority(pid int) error {
	return unix.Setpriority(unix.PRIO_PROCESS, pid, 19)
}

// client is a connection pool to the sandbox for the explorer.
func (sb *sandbox) client() *redis.Client {
	return redis.NewClient(explorerOptions(sb.srv.ClientOptions()))
}

// explorerOptions sets o as the explorer's connections to a sandbox want.
func explorerOptions(o *redis.Options) *redis.Options {
	// A server killed is refused at once: no retry, one dial. A read
	// waits as long as any budget (-1, no timeout, does not survive the
	// copy of the options the explorer makes): run stops the script.
	o.PoolSize, o.MaxRetries, o.DialerRetries, o.ReadTimeout = 2, -1, 1, time.Hour
	return o
}

// controlOptions are the options of the explorer's own connection to the
// sandbox (its resets, clock ticks, the KEYS of its scripts), as the
// sandbox's administrative user, which the pasted scripts never run as.
func (sb *sandbox) controlOptions() *redis.Options {
	return explorerOptions(sb.srv.AdminOptions())
}

// errOverBudget, errOverWall, errScriptOver and errServerLost report an
// operation the sandbox cut short.
var (
	errOverBudget = errors.New("over budget")
	errOverWall   = errors.New("over its wall time")
	errScriptOver = errors.New("a script over budget")
	errServerLost = errors.New("sandbox server lost")
	errAborted    = errors.New("session ended")
)

// limits bound an operation on a sandbox.
type limits struct {
	// cpu bounds the CPU time the sandbox spends during the operation
	// (0: no bound).
	cpu time.Duration
	// wall bounds the operation's wall time.
	wall time.Duration
	// script bounds the CPU time of each script that runs long enough to
	// make the server answer BUSY (Redis's busy-reply-threshold, 100 ms
	// here), counted from when the service sees it busy (it looks every
	// scriptPoll); 0: no bound.
	script time.Duration
}

// stepLimits are the limits of a step of budget.
func stepLimits(budget time.Duration) limits {
	return limits{cpu: budget, wall: stepWallFactor * budget, script: budget}
}

// scriptPoll is how often a sandbox is asked whether a script runs long.
const scriptPoll = 100 * time.Millisecond

// cpuTime is the CPU time the sandbox's process has spent (user and
// system, every thread), read from /proc/PID/stat; 0 when it cannot be
// read (the process has ended).
func (sb *sandbox) cpuTime() time.Duration {
	pid := sb.srv.Pid()
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// the fields after the command's name, which is in parentheses:
	// state is the first; utime and stime the 12th and 13th
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	// in clock ticks of USER_HZ, 100 a second on Linux
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// watchScripts closes over once a script has run past budget of the
// sandbox's CPU time, or scriptWallFactor times as long on the wall (the
// server answers BUSY to the service's PING all that time, or does not
// answer it: a script spinning inside one C function), and returns when
// ctx ends.
func (sb *sandbox) watchScripts(ctx context.Context, budget time.Duration, over chan<- struct{}) {
	tk := time.NewTicker(scriptPoll)
	defer tk.Stop()
	// the CPU time and the time when the script was seen busy first
	busy, since := time.Duration(-1), time.Time{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
		}
		err := sb.admin.Ping(ctx).Err()
		var ne net.Error
		if ctx.Err() != nil || err == nil ||
			!strings.HasPrefix(err.Error(), "BUSY") && !(errors.As(err, &ne) && ne.Timeout()) {
			busy = -1
			continue
		}
		now := sb.cpuTime()
		if busy < 0 {
			busy, since = now, time.Now()
		}
		if now-busy >= budget || time.Since(since) >= scriptWallFactor*budget {
			close(over)
			return
		}
	}
}

// run runs f on the sandbox, bounded by lim: once a bound of lim has run
// out or ctx has ended, f's context is cancelled and the script running,
// if any, is stopped (SCRIPT KILL); if f has not returned killWait later
// (a script that wrote, or that spins inside a C function, cannot be
// killed so), the server is sent SIGKILL and run returns without waiting
// for f, which ends once the process has exited: the next run, and
// Close, wait for it (drain). A server killed or lost is left for lost to
// report, and restart to start again. The error wraps errOverBudget,
// errOverWall, errScriptOver or errServerLost when f was cut short,
// errAborted after abort.
func (sb *sandbox) run(ctx context.Context, lim limits, f func(context.Context) error) error {
	sb.drain()
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sb.mu.Lock()
	if sb.aborted {
		sb.mu.Unlock()
		return errAborted
	}
	sb.cancel = cancel
	sb.mu.Unlock()
	start, cpu0 := time.Now(), sb.cpuTime()
	fdone := make(chan error, 1)
	go func() { fdone <- f(fctx) }()
	wctx, wcancel := context.WithCancel(fctx)
	scriptOver := make(chan struct{})
	var watching sync.WaitGroup
	if lim.script > 0 {
		watching.Go(func() { sb.watchScripts(wctx, lim.script, scriptOver) })
	}
	err, over := sb.await(fctx, lim, start, cpu0, fdone, scriptOver)
	// the watch is done before stop, which takes the admin connection
	wcancel()
	watching.Wait()
	if over != nil || fctx.Err() != nil {
		cancel()
		if err = sb.stop(fdone); errors.Is(err, errDetached) {
			sb.mu.Lock()
			sb.pending = fdone
			sb.mu.Unlock()
		}
	}
	sb.mu.Lock()
	sb.cancel = nil
	aborted := sb.aborted
	sb.mu.Unlock()
	switch {
	case aborted:
		return errAborted
	case over != nil:
		return fmt.Errorf("%w: %w", over, err)
	case err != nil && sb.lost():
		return fmt.Errorf("%w: %w", errServerLost, err)
	}
	return err
}

// await waits for f's end (fdone) within lim, from start, when the
// sandbox had spent cpu0: over is the bound that ran out first, if one
// did (errOverBudget, errOverWall or errScriptOver, with how much CPU
// time the operation had).
func (sb *sandbox) await(ctx context.Context, lim limits, start time.Time, cpu0 time.Duration,
	fdone <-chan error, scriptOver <-chan struct{}) (err, over error) {
	// the CPU time spent is at most the wall time: no need to look
	// before the CPU budget has passed on the wall
	next := lim.wall
	if lim.cpu > 0 {
		next = min(lim.cpu, lim.wall)
	}
	t := time.NewTimer(next)
	defer t.Stop()
	for {
		select {
		case err := <-fdone:
			return err, nil
		case <-scriptOver:
			return nil, errScriptOver
		case <-ctx.Done():
			return nil, nil
		case <-t.C:
		}
		used, took := max(sb.cpuTime()-cpu0, 0), time.Since(start)
		switch {
		case lim.cpu > 0 && used >= lim.cpu:
			return nil, &overError{errOverBudget, used, took}
		case took >= lim.wall:
			return nil, &overError{errOverWall, used, took}
		}
		wait := lim.wall - took
		if lim.cpu > 0 {
			wait = min(wait, max(lim.cpu-used, 10*time.Millisecond))
		}
		t.Reset(wait)
	}
}

// overError is a bound of an operation run out: errOverBudget or
// errOverWall, with the sandbox's CPU time and the wall time it took.
type overError struct {
	bound     error
	cpu, wall time.Duration
}

func (e *overError) Error() string {
	return fmt.Sprintf("%v: %v of CPU time in %v", e.bound, e.cpu, e.wall.Round(time.Millisecond))
}

func (e *overError) Unwrap() error { return e.bound }

// spent says how much CPU and wall time an operation cut short by a bound
// had taken.
func spent(err error) string {
	var oe *overError
	switch {
	case errors.Is(err, errScriptOver):
		return "a script ran past its bound"
	case !errors.As(err, &oe):
		return "the bound ran out"
	}
	first := "the CPU time"
	if errors.Is(oe.bound, errOverWall) {
		first = "the wall's"
	}
	return fmt.Sprintf("it spent %v of CPU time in %v, %s ran out first", oe.cpu,
		oe.wall.Round(100*time.Millisecond), first)
}

// errDetached: the operation was left to end after its server's kill.
var errDetached = errors.New("the server was killed")

// stop ends the script running on the sandbox: SCRIPT KILL, then, if the
// operation has not returned killWait later, SIGKILL to the server, and
// errDetached. It returns the operation's error when it returned.
func (sb *sandbox) stop(fdone <-chan error) error {
	ctx, cancel := context.WithTimeout(context.Background(), killWait)
	err := sb.admin.ScriptKill(ctx).Err()
	cancel()
	if err == nil || strings.HasPrefix(err.Error(), "NOTBUSY") {
		select {
		case err := <-fdone:
			return err
		case <-time.After(killWait):
		}
	} else {
		// UNKILLABLE (it wrote), or no answer: nothing to wait for
		select {
		case err := <-fdone:
			return err
		default:
		}
	}
	sb.mu.Lock()
	sb.killed = true
	sb.mu.Unlock()
	sb.srv.Signal(syscall.SIGKILL)
	return errDetached
}

// drain waits for an operation left running by run after its server's
// kill: it ends once the process has exited.
func (sb *sandbox) drain() {
	sb.mu.Lock()
	p := sb.pending
	sb.pending = nil
	sb.mu.Unlock()
	if p != nil {
		<-p
	}
}

// lost reports whether the server was killed, has exited, or refuses
// connections (it crashed: Redis aborts when an allocation fails). A
// server that is merely slow to answer is not lost.
func (sb *sandbox) lost() bool {
	sb.mu.Lock()
	killed := sb.killed
	sb.mu.Unlock()
	pid := sb.srv.Pid()
	if killed || pid == 0 || syscall.Kill(pid, 0) != nil {
		return true
	}
	var ne net.Error
	err := sb.admin.Ping(context.Background()).Err()
	return err != nil && !(errors.As(err, &ne) && ne.Timeout()) && !strings.HasPrefix(err.Error(), "BUSY")
}

// restart starts the server again, empty, on its port, confined and
// bounded as at first.
func (sb *sandbox) restart() error {
	sb.srv.Kill()
	sb.drain()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sb.srv.Kill()
	if err := sb.srv.Restart(ctx); err != nil {
		return fmt.Errorf("exploresession: restart a sandbox: %w", err)
	}
	if err := lowerPriority(sb.srv.Pid()); err != nil {
		sb.srv.Kill()
		return fmt.Errorf("exploresession: lower a sandbox's priority: %w", err)
	}
	sb.mu.Lock()
	sb.killed = false
	sb.mu.Unlock()
	return nil
}

// kill sends the server SIGKILL, for lost to report and restart to start
// again.
func (sb *sandbox) kill() {
	sb.mu.Lock()
	sb.killed = true
	sb.mu.Unlock()
	sb.srv.Signal(syscall.SIGKILL)
}

// abort ends the operation running on the sandbox, if any, and sends the
// server SIGKILL, without waiting for it to exit: Close follows, and
// waits.
func (sb *sandbox) abort() {
	sb.mu.Lock()
	sb.aborted, sb.killed = true, true
	cancel := sb.cancel
	sb.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	sb.srv.Signal(syscall.SIGKILL)
}

// Close kills the server, waits for the operation it ran, and removes
// its directory.
func (sb *sandbox) Close() error {
	sb.abort()
	sb.srv.Kill()
	sb.drain()
	sb.admin.Close()
	sb.srv.Stop()
	return nil
}
