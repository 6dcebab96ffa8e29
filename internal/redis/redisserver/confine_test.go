package redisserver_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/redis/redisserver"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// startConfined starts a confined server for the test, stopped at its end.
func startConfined(t *testing.T) *redisserver.Server {
	t.Helper()
	redistest.RequireServer(t)
	c := redisserver.Confinement{MaxMemory: 8 << 20, Heap: 64 << 20, MaxString: 1 << 20}
	srv, err := redisserver.Start(context.Background(), redisserver.Options{Confine: &c})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return srv
}

// TestConfined: a confined server asks a password of every connection,
// keeps it off its command line, refuses its clients' user the commands
// that administer it or reach beyond its one database (and logs the
// refusals, even those a script caught), bounds a string, and cannot
// write a core file; its admin user may do what the clients may not.
func TestConfined(t *testing.T) {
	srv := startConfined(t)
	ctx := context.Background()
	anon := redis.NewClient(&redis.Options{Addr: srv.Addr(), Protocol: 2})
	defer anon.Close()
	if err := anon.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Errorf("PING without a password: %v; want NOAUTH", err)
	}
	rdb := redis.NewClient(srv.ClientOptions())
	defer rdb.Close()
	admin := redis.NewClient(srv.AdminOptions())
	defer admin.Close()
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("a data command: %v", err)
	}
	for _, cmd := range [][]any{
		{"MIGRATE", "127.0.0.1", "1", "k", 0, 100}, {"SORT", "l", "STORE", "s"}, {"SWAPDB", 0, 1},
		{"MOVE", "k", 1}, {"SELECT", 0}, {"FLUSHALL"}, {"FLUSHDB"}, {"CONFIG", "SET", "maxmemory", "0"},
		{"DEBUG", "SLEEP", 0}, {"SHUTDOWN", "NOSAVE"}, {"ACL", "LIST"}, {"CLIENT", "LIST"}, {"INFO"},
		{"KEYS", "*"}, {"RESTORE", "k2", 0, "x"},
	} {
		// DEBUG is refused before its user's rights are looked at.
		if err := rdb.Do(ctx, cmd...).Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") &&
			!strings.Contains(err.Error(), "DEBUG command not allowed") {
			t.Errorf("%v: %v; want NOPERM", cmd, err)
		}
	}
	err := rdb.Eval(ctx, "return redis.pcall('FLUSHALL')", nil).Err()
	if err == nil || !strings.Contains(err.Error(), "can't run this command") {
		t.Errorf("FLUSHALL in a script: %v; want a refusal", err)
	}
	if err := rdb.SetRange(ctx, "k", 2<<20, "x").Err(); err == nil {
		t.Error("SETRANGE past MaxString succeeded")
	}
	if n, err := admin.Exists(ctx, "k").Result(); err != nil || n != 1 {
		t.Errorf("the key after the refusals: %d (%v)", n, err)
	}
	rs, err := srv.Refusals(ctx)
	if err != nil {
		t.Fatal(err)
	}
	refused := map[redisserver.Refusal]bool{}
	for _, r := range rs {
		refused[r] = true
	}
	for _, want := range []redisserver.Refusal{{"migrate", "toplevel", 1}, {"flushall", "lua", 1},
		{"select", "toplevel", 1}, {"config set", "toplevel", 1}} {
		if !refused[want] {
			t.Errorf("refusals %+v: want %+v", rs, want)
		}
	}
	if err := admin.Info(ctx, "server").Err(); err != nil {
		t.Errorf("INFO as admin: %v", err)
	}
	limits, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", srv.Pid()))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(limits)) {
		if f := strings.Fields(line); strings.HasPrefix(line, "Max core file size") && (f[4] != "0" || f[5] != "0") {
			t.Errorf("core file limit: %s", line)
		}
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", srv.Pid()))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []*redis.Options{srv.ClientOptions(), srv.AdminOptions()} {
		if o.Password == "" || strings.Contains(string(cmdline), o.Password) {
			t.Errorf("password %q empty or on the command line %q", o.Password, cmdline)
		}
	}
}

// orphanEnv makes the test binary start a confined server, print its
// process ID and directory, and wait to be killed.
const orphanEnv = "REDISSERVER_TEST_ORPHAN"

// TestSweepConfined: a process killed with SIGKILL while its confined
// server runs a script that never ends leaves no server behind (it dies
// with its parent), and SweepConfined removes the directory it left,
// while it leaves the directory of a server whose owner runs.
func TestSweepConfined(t *testing.T) {
	if os.Getenv(orphanEnv) == "1" {
		c := redisserver.Confinement{MaxMemory: 8 << 20}
		srv, err := redisserver.Start(context.Background(), redisserver.Options{Confine: &c})
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		rdb := redis.NewClient(srv.ClientOptions())
		go rdb.Eval(context.Background(), "while true do end", nil)
		fmt.Println(srv.Pid(), srv.Dir())
		time.Sleep(time.Minute)
		os.Exit(1)
	}
	redistest.RequireServer(t)
	t.Setenv("TMPDIR", t.TempDir())
	mine := startConfined(t)
	cmd := exec.Command(os.Args[0], "-test.run", "^TestSweepConfined$")
	cmd.Env = append(os.Environ(), orphanEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	var dir string
	if _, err := fmt.Fscan(out, &pid, &dir); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the child said no server: %v", err)
	}
	time.Sleep(50 * time.Millisecond) // the script is running
	cmd.Process.Kill()
	cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(pid, 0) == nil && !zombie(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the server (pid %d) outlived its parent by 5 s", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the orphan's directory: %v", err)
	}
	// A server whose parent-death signal was lost, in a directory named
	// for the child that has died.
	lost := dir + "-lost"
	if err := os.Mkdir(lost, 0o700); err != nil {
		t.Fatal(err)
	}
	bin, _ := redisserver.Binary()
	orphan := exec.Command(bin, "--port", "0", "--save", "")
	orphan.Dir = lost
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	defer orphan.Process.Kill()
	waited := make(chan error, 1)
	go func() { waited <- orphan.Wait() }()
	removed, err := redisserver.SweepConfined()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(removed)
	if !slices.Equal(removed, []string{dir, lost}) {
		t.Errorf("swept %v; want %s and %s", removed, dir, lost)
	}
	for _, d := range []string{dir, lost} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("the orphan's directory %s is still there: %v", d, err)
		}
	}
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		t.Error("the server left running in an orphan's directory was not stopped")
	}
	if _, err := os.Stat(mine.Dir()); err != nil {
		t.Errorf("the directory of a running owner's server was swept: %v", err)
	}
}

// zombie reports whether process pid has exited and waits to be reaped.
func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && strings.HasPrefix(strings.TrimSpace(string(b[i+1:])), "Z")
}
