package exploresession

import (
	"context"
	"errors"
	"fmt"
	"net"
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
	// replay of its schedule, every script included.
	DefaultStepBudget = 2 * time.Second
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
	// A server killed is refused at once: no retry, one dial. A read
	// waits as long as any budget (-1, no timeout, does not survive the
	// copy of the options the explorer makes): run stops the script.
	o := sb.srv.ClientOptions()
	o.PoolSize, o.MaxRetries, o.DialerRetries, o.ReadTimeout = 2, -1, 1, time.Hour
	return redis.NewClient(o)
}

// errOverBudget and errServerLost report an operation the sandbox cut
// short.
var (
	errOverBudget = errors.New("over budget")
	errServerLost = errors.New("sandbox server lost")
	errAborted    = errors.New("session ended")
)

// run runs f on the sandbox, bounded by budget: once the budget has run
// out or ctx has ended, f's context is cancelled and the script running,
// if any, is stopped (SCRIPT KILL); if f has not returned killWait later
// (a script that wrote, or that spins inside a C function, cannot be
// killed so), the server is sent SIGKILL and run returns without waiting
// for f, which ends once the process has exited: the next run, and
// Close, wait for it (drain). A server killed or lost is left for lost to
// report, and restart to start again. The error wraps errOverBudget or
// errServerLost when f was cut short, errAborted after abort.
func (sb *sandbox) run(ctx context.Context, budget time.Duration, f func(context.Context) error) error {
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
	fdone := make(chan error, 1)
	go func() { fdone <- f(fctx) }()
	t := time.NewTimer(budget)
	defer t.Stop()
	var err error
	over := false
	select {
	case err = <-fdone:
	case <-t.C:
		over = true
	case <-fctx.Done():
	}
	if over || fctx.Err() != nil {
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
	case over:
		return fmt.Errorf("%w: %w", errOverBudget, err)
	case err != nil && sb.lost():
		return fmt.Errorf("%w: %w", errServerLost, err)
	}
	return err
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
