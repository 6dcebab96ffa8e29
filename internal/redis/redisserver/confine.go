package redisserver

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sys/unix"
)

// Confinement bounds a server that runs code its owner did not write: a
// recipe's scripts, Lua pasted into the service. Its clients log in as a
// user that may run data commands on its one database only: not the
// commands that administer the server (@admin), nor those that reach
// another server or database or wipe the data (@dangerous: MIGRATE,
// SORT ... STORE, SWAPDB, FLUSHALL, FLUSHDB, ...), nor SELECT or MOVE;
// Redis checks these inside scripts too (KEYS and RESTORE are @dangerous:
// the explorer runs its own, its scripts' KEYS, the liveness probe's DUMP
// and RESTORE, as AdminUser, and a payload given to RESTORE is checked in
// full, sanitize-dump-payload). The server asks a password of every
// connection (its port is on loopback, where any local program could
// reach it), cannot write a core file, and dies with its parent
// (SIGKILL), even while a script runs. The passwords are in a
// configuration file of the server's directory, readable by its owner
// only, never on a command line.
type Confinement struct {
	// MaxMemory is the server's maxmemory in bytes (noeviction): what its
	// keys may hold before a write is refused.
	MaxMemory int64
	// Heap, when positive, bounds how far the process's address space may
	// grow past what it maps once started: Lua's heap, which maxmemory
	// does not count, is within it. An allocation past it fails, and the
	// server with it.
	Heap int64
	// MaxString, when positive, is the longest string a command may make
	// (proto-max-bulk-len; Redis takes 1 MiB at least): SETRANGE, APPEND
	// and SETBIT past it are refused.
	MaxString int64
}

// ConfinedDirPrefix begins the name of a confined server's directory,
// in the system's temporary directory, followed by its owner's process
// ID and start time: SweepConfined finds the directories whose owner has
// died.
const ConfinedDirPrefix = "lockmarket-confined-"

// AdminUser is the user of a confined server's administrative
// connections (AdminOptions): the one that may stop a script, read the
// ACL log, ask INFO.
const AdminUser = "admin"

// confinedConf is the name of a confined server's configuration file in
// its directory.
const confinedConf = "confined.conf"

// password is a fresh random password.
func password() string {
	b := make([]byte, 24)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// confinedDir makes the directory of a confined server: its name says
// which process owns it.
func confinedDir() (string, error) {
	start, err := procStart(os.Getpid())
	if err != nil {
		return "", fmt.Errorf("redisserver: this process's start time: %w", err)
	}
	return os.MkdirTemp("", fmt.Sprintf("%s%d-%d-", ConfinedDirPrefix, os.Getpid(), start))
}

// writeConfinedConf writes the configuration file of a confined server
// into its directory: its users, with their passwords.
func (s *Server) writeConfinedConf() error {
	lines := []string{
		"user default on >" + s.password + " ~* &* +@all -@admin -@dangerous " +
			"-select -swapdb -move -migrate -sort -flushall -flushdb",
		"user " + AdminUser + " on >" + s.adminPassword + " ~* &* +@all",
	}
	return os.WriteFile(filepath.Join(s.dir, confinedConf), []byte(strings.Join(lines, "\n")+"\n"), 0o600)
}

// args are the command-line arguments of a confined server,
// after the others (the last of an option wins): its bounds.
func (c *Confinement) args() []string {
	args := []string{
		"--maxmemory", strconv.FormatInt(c.MaxMemory, 10), "--maxmemory-policy", "noeviction",
		"--databases", "1", "--sanitize-dump-payload", "yes",
		"--enable-debug-command", "no", "--enable-module-command", "no", "--enable-protected-configs", "no",
	}
	if c.MaxString > 0 {
		args = append(args, "--proto-max-bulk-len", strconv.FormatInt(c.MaxString, 10))
	}
	return args
}

// noCore forbids process pid a core file.
func noCore(pid int) error {
	return unix.Prlimit(pid, unix.RLIMIT_CORE, &unix.Rlimit{}, nil)
}

// limitHeap bounds the address space of process pid to what it maps now
// plus heap bytes.
func limitHeap(pid int, heap int64) error {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return err
	}
	defer f.Close()
	var kib int64 = -1
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmSize:"); ok {
			kib, err = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return err
			}
		}
	}
	if kib < 0 {
		return errors.New("no VmSize in /proc/PID/status")
	}
	lim := uint64(kib<<10 + heap)
	return unix.Prlimit(pid, unix.RLIMIT_AS, &unix.Rlimit{Cur: lim, Max: lim}, nil)
}

// Confined reports whether the server was started with a Confinement.
func (s *Server) Confined() bool { return s.opts.Confine != nil }

// ClientOptions are the options of a client of the server: for a
// confined server, its confined user's password.
func (s *Server) ClientOptions() *redis.Options {
	return &redis.Options{Addr: s.Addr(), Password: s.password}
}

// AdminOptions are the options of an administrative client of the
// server: for a confined server, AdminUser and its password; else those
// of ClientOptions.
func (s *Server) AdminOptions() *redis.Options {
	o := s.ClientOptions()
	if s.Confined() {
		o.Username, o.Password = AdminUser, s.adminPassword
	}
	return o
}

// Refusal is a kind of command a confined server refused its clients,
// as its ACL log has it.
type Refusal struct {
	// Command is the command refused, as Redis names it ("migrate",
	// "config set").
	Command string
	// Context is where it was sent: "toplevel", "multi", or "lua" (from
	// a script).
	Context string
	// Count is how many times it was refused.
	Count int64
}

// maxRefusals is how many entries of the ACL log Refusals reads.
const maxRefusals = 64

// Refusals are the commands the confined user was refused since the
// server started (or restarted), most recent first: what code run on it
// tried and was denied, even where a script caught the error. It is
// empty for a server that is not confined.
func (s *Server) Refusals(ctx context.Context) ([]Refusal, error) {
	if !s.Confined() {
		return nil, nil
	}
	c := redis.NewClient(s.adminClientOptions())
	defer c.Close()
	log, err := c.ACLLog(ctx, maxRefusals).Result()
	if err != nil {
		return nil, fmt.Errorf("redisserver: the ACL log: %w", err)
	}
	var out []Refusal
	for _, e := range log {
		if e.Username == "default" && e.Reason != "auth" {
			out = append(out, Refusal{Command: strings.ReplaceAll(e.Object, "|", " "), Context: e.Context, Count: e.Count})
		}
	}
	return out, nil
}

// adminClientOptions are AdminOptions for one short-lived connection of
// this package's own.
func (s *Server) adminClientOptions() *redis.Options {
	o := s.AdminOptions()
	o.Protocol, o.DisableIdentity, o.MaxRetries, o.PoolSize = 2, true, -1, 1
	return o
}

// procStart is the start time of process pid (clock ticks since boot,
// field 22 of /proc/PID/stat): with the pid, it names one process, even
// after the pid is reused.
func procStart(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command's name, in parentheses, may hold spaces: count fields
	// after its closing one.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, errors.New("redisserver: malformed /proc/PID/stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, errors.New("redisserver: malformed /proc/PID/stat")
	}
	return strconv.ParseUint(f[19], 10, 64) // field 22: the 20th after the name
}

// confineProcess bounds process pid of a confined server: at its start,
// no core file; once it answers (ready), its heap.
func (s *Server) confineProcess(pid int, ready bool) error {
	c := s.opts.Confine
	switch {
	case c == nil:
		return nil
	case !ready:
		if err := noCore(pid); err != nil {
			return fmt.Errorf("redisserver: forbid a core file: %w", err)
		}
	case c.Heap > 0:
		if err := limitHeap(pid, c.Heap); err != nil {
			return fmt.Errorf("redisserver: bound the heap: %w", err)
		}
	}
	return nil
}

// SweepConfined stops the confined servers that a process which has
// since died left behind in the system's temporary directory (it was
// killed before it could stop them), and removes their directories. A
// directory whose owner still runs, or that is another user's, is left
// alone. It returns the directories removed.
func SweepConfined() ([]string, error) {
	dirs, err := filepath.Glob(filepath.Join(os.TempDir(), ConfinedDirPrefix+"*"))
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, dir := range dirs {
		if !orphaned(dir) {
			continue
		}
		if err := killIn(dir); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, dir)
	}
	return removed, errors.Join(errs...)
}

// orphaned reports whether dir is a confined server's directory of this
// user whose owner, named in it, no longer runs.
func orphaned(dir string) bool {
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR ||
		int(st.Uid) != os.Getuid() {
		return false
	}
	var pid int
	var start uint64
	name := strings.TrimPrefix(filepath.Base(dir), ConfinedDirPrefix)
	if _, err := fmt.Sscanf(strings.ReplaceAll(name, "-", " "), "%d %d", &pid, &start); err != nil || pid <= 0 {
		return false
	}
	now, err := procStart(pid)
	return err != nil || now != start
}

// killIn sends SIGKILL to every process of this user whose working
// directory is dir (a confined server runs in its own), and waits until
// none is left.
func killIn(dir string) error {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real // as /proc/PID/cwd says it
	}
	for range 100 {
		pids, err := processesIn(dir)
		if err != nil || len(pids) == 0 {
			return err
		}
		for _, pid := range pids {
			unix.Kill(pid, unix.SIGKILL)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("redisserver: processes in %s outlive SIGKILL", dir)
}

// processesIn lists the processes whose working directory is dir, among
// those this user may look into.
func processesIn(dir string) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid)); err == nil && cwd == dir {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// DefaultConfinement bounds a private server for code its user did not
// write, unless told otherwise: 256 MiB of keys, as much again of Lua
// heap, strings of 1 MiB.
var DefaultConfinement = Confinement{MaxMemory: 256 << 20, Heap: 256 << 20, MaxString: 1 << 20}
