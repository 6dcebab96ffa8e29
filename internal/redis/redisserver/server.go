// Package redisserver starts and stops private redis-server processes on
// free loopback ports. The simulator and the HTTP service use it for
// "-redis auto"; tests use it, through package redistest, to run against a
// real server.
package redisserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNoBinary is returned by Start when no redis-server binary is on PATH.
var ErrNoBinary = errors.New("redisserver: no redis-server binary on PATH")

// Binary returns the path of the redis-server binary, or ErrNoBinary.
func Binary() (string, error) {
	p, err := exec.LookPath("redis-server")
	if err != nil {
		return "", ErrNoBinary
	}
	return p, nil
}

// Options configures a private server.
type Options struct {
	// Binary is the redis-server to run: a path, or a name looked up on
	// PATH; empty means redis-server on PATH.
	Binary string
	// Port to listen on; 0 picks a free loopback port.
	Port int
	// Args are extra command-line arguments, e.g. "--cluster-enabled", "yes".
	Args []string
	// Dir is the working directory (cluster config, dumps); empty means a
	// fresh temporary directory removed by Stop.
	Dir string
	// Stderr receives the server's output; nil discards it.
	Stderr *os.File
	// Env is the server's environment; nil means the parent's.
	Env []string
	// Confine, when set, confines the server (see Confinement); Dir is
	// then a fresh directory named for SweepConfined, unless given.
	Confine *Confinement
}

// Server is one running redis-server child process.
type Server struct {
	opts    Options
	bin     string
	port    int
	dir     string
	ownsDir bool
	// password and adminPassword are a confined server's: its clients'
	// and AdminUser's.
	password, adminPassword string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// Start launches redis-server on 127.0.0.1 with persistence off and waits
// until it answers PING. Stop it with Stop.
func Start(ctx context.Context, opts Options) (*Server, error) {
	bin, err := Binary()
	if opts.Binary != "" {
		if bin, err = exec.LookPath(opts.Binary); err != nil {
			err = fmt.Errorf("%w: %v", ErrNoBinary, err)
		}
	}
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, bin: bin, dir: opts.Dir}
	if s.dir == "" {
		if opts.Confine != nil {
			s.dir, err = confinedDir()
		} else {
			s.dir, err = os.MkdirTemp("", "lockmarket-redis-")
		}
		if err != nil {
			return nil, err
		}
		s.ownsDir = true
	}
	if opts.Confine != nil {
		s.password, s.adminPassword = password(), password()
		if err := s.writeConfinedConf(); err != nil {
			s.removeDir()
			return nil, fmt.Errorf("redisserver: %w", err)
		}
	}
	// A free port found by listening can be taken by someone else before
	// redis-server binds it: retry a few times with a new port.
	for attempt := 0; attempt < 5; attempt++ {
		s.port = opts.Port
		if s.port == 0 {
			if s.port, err = FreePort(); err != nil {
				break
			}
		}
		if err = s.start(ctx, false); err == nil {
			return s, nil
		}
		if opts.Port != 0 || ctx.Err() != nil {
			break
		}
	}
	s.removeDir()
	return nil, err
}

// removeDir removes the server's directory if Start made it.
func (s *Server) removeDir() {
	if s.ownsDir {
		os.RemoveAll(s.dir)
	}
}

// FreePort asks the kernel for a free TCP port on 127.0.0.1.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// start launches the process and waits until it answers PING, or with
// loading until it answers at all, be it LOADING while it reads its data.
func (s *Server) start(ctx context.Context, loading bool) error {
	var args []string
	if s.Confined() {
		// The configuration file comes first, as redis-server wants it.
		args = append(args, filepath.Join(s.dir, confinedConf))
	}
	args = append(args,
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--daemonize", "no",
		"--protected-mode", "yes",
		"--dir", s.dir,
		"--enable-debug-command", "local",
		"--loglevel", "warning",
	)
	if sock := s.Socket(); sock != "" {
		// Also a unix socket, in the server's own directory, that only
		// this user may open: a round trip over it costs less than over
		// TCP loopback (OverSocket).
		args = append(args, "--unixsocket", sock, "--unixsocketperm", "700")
	}
	args = append(args, s.opts.Args...)
	if s.Confined() {
		args = append(args, s.opts.Confine.args()...)
	}
	cmd := exec.Command(s.bin, args...)
	cmd.Dir = s.dir
	cmd.Env = s.opts.Env
	if s.opts.Stderr != nil {
		cmd.Stdout, cmd.Stderr = s.opts.Stderr, s.opts.Stderr
	}
	// Own process group, so a Ctrl-C in the terminal reaches the parent
	// only and the parent stops the server in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if s.Confined() {
		// A script that runs does not let Redis act on SIGTERM.
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("redisserver: start: %w", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	if err := s.confineProcess(cmd.Process.Pid, false); err != nil {
		cmd.Process.Kill()
		<-done
		return err
	}

	// One dial per poll: go-redis's own dialer retries a refused
	// connection after 100 ms, several times, which would make every
	// start wait that long for a server that listens within milliseconds.
	opts := s.adminClientOptions()
	opts.DialTimeout, opts.DialerRetries = 200*time.Millisecond, 1
	c := redis.NewClient(opts)
	defer c.Close()
	var dialer net.Dialer
	deadline := time.Now().Add(10 * time.Second)
	for {
		dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		conn, err := dialer.DialContext(dctx, "tcp", s.Addr())
		cancel()
		if err == nil {
			conn.Close()
			if err := c.Ping(ctx).Err(); err == nil || loading && isLoading(err) {
				// A free port can be taken by another redis-server between
				// FreePort and the bind, and that one answers while this one
				// exits: the server must be this process.
				if pid, ok := processID(ctx, c); ok && pid != cmd.Process.Pid {
					cmd.Process.Kill()
					<-done
					return fmt.Errorf("redisserver: port %d is another redis-server's (pid %d)", s.port, pid)
				}
				if err := s.confineProcess(cmd.Process.Pid, true); err != nil {
					cmd.Process.Kill()
					<-done
					return err
				}
				break
			}
		}
		select {
		case <-done:
			return fmt.Errorf("redisserver: redis-server on port %d exited at start", s.port)
		case <-ctx.Done():
			cmd.Process.Kill()
			<-done
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-done
			return fmt.Errorf("redisserver: redis-server on port %d did not answer within 10s", s.port)
		}
	}
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()
	return nil
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// maxSocketPath is the longest unix socket path Socket gives: the
// kernel's limit (sun_path, 108 bytes on Linux) less a margin.
const maxSocketPath = 100

// Socket is the path of the server's unix socket, in its directory, or ""
// when the directory's path is too long for one (it then listens on TCP
// only).
func (s *Server) Socket() string {
	p := filepath.Join(s.dir, "redis.sock")
	if len(p) > maxSocketPath {
		return ""
	}
	return p
}

// OverSocket is a copy of o, options of a client of this server, that
// talks to it over its unix socket (Socket) rather than TCP loopback:
// the same server and users, a cheaper round trip. Without a socket it is
// a plain copy.
func (s *Server) OverSocket(o *redis.Options) *redis.Options {
	c := *o
	if sock := s.Socket(); sock != "" {
		c.Network, c.Addr = "unix", sock
	}
	return &c
}

// Port is the server's TCP port.
func (s *Server) Port() int { return s.port }

// Dir is the server's working directory.
func (s *Server) Dir() string { return s.dir }

// Pid is the process ID of the running server, or 0.
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Signal sends sig to the server process (e.g. SIGSTOP and SIGCONT to
// stall it).
func (s *Server) Signal(sig os.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return errors.New("redisserver: not running")
	}
	return s.cmd.Process.Signal(sig)
}

// Kill stops the process at once (SIGKILL) and waits for it to exit; the
// working directory is kept so Restart can reuse it.
func (s *Server) Kill() { s.halt(syscall.SIGKILL) }

func (s *Server) halt(sig syscall.Signal) {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd, s.done = nil, nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGCONT) // a stopped process cannot handle SIGTERM
	cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}

// Restart starts the server again on the same port (with no data, since
// persistence is off, unless Args turned it on) after Kill or Stop, and
// waits until it has loaded its data and answers PING.
func (s *Server) Restart(ctx context.Context) error { return s.restart(ctx, false) }

// RestartLoading is Restart that returns as soon as the server answers,
// possibly while it still reads its data and refuses most commands with
// LOADING: what clients meet right after a restart with a big dataset.
func (s *Server) RestartLoading(ctx context.Context) error { return s.restart(ctx, true) }

func (s *Server) restart(ctx context.Context, loading bool) error {
	s.halt(syscall.SIGTERM)
	var err error
	for i := 0; i < 50; i++ { // the port may linger briefly after exit
		if err = s.start(ctx, loading); err == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return err
}

// processID is the process ID the server at c reports, and false when it
// does not say (an ACL user without INFO, as the explorer's sandbox has).
func processID(ctx context.Context, c *redis.Client) (int, bool) {
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			pid, err := strconv.Atoi(v)
			return pid, err == nil
		}
	}
	return 0, false
}

// isLoading reports whether err is the LOADING error reply of a server
// still reading its data.
func isLoading(err error) bool {
	var reply redis.Error
	return errors.As(err, &reply) && strings.HasPrefix(reply.Error(), "LOADING ")
}

// Stop terminates the server (SIGTERM, then SIGKILL after 5 s; a
// confined server, which may be running a script that does not end,
// SIGKILL at once), waits for it and removes its temporary directory. It
// is safe to call twice.
func (s *Server) Stop() {
	if s.Confined() {
		s.halt(syscall.SIGKILL)
	} else {
		s.halt(syscall.SIGTERM)
	}
	s.removeDir()
}

// Version asks a running server for its redis_version, or "" if it cannot.
func Version(ctx context.Context, c redis.UniversalClient) string {
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return ""
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v
		}
	}
	return ""
}

// BinaryVersion is the version of the redis-server binary bin, from its
// --version line ("Redis server v=7.0.15 sha=..."), or "unknown".
func BinaryVersion(bin string) string {
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return "unknown"
	}
	for f := range strings.FieldsSeq(string(out)) {
		if v, ok := strings.CutPrefix(f, "v="); ok {
			return v
		}
	}
	return "unknown"
}
