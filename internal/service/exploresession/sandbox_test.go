package exploresession

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/targets"
	"github.com/lockmarket/lockmarket/internal/service/api"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/prometheus/client_golang/prometheus"
)

const release = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`

// addUnchecked adds to m a session of a lock whose acquire script is
// given, without the check of its names: what the sandbox itself lets a
// script do.
func addUnchecked(t *testing.T, m *Manager, client, acquire string) string {
	t.Helper()
	tg, err := targets.Lua(targets.LuaRecipe{Acquire: targets.Script{Name: "acquire.lua", Source: acquire},
		Release: targets.Script{Name: "release.lua", Source: release}})
	if err != nil {
		t.Fatal(err)
	}
	id, _, err := m.store.Add(client, func() (*session, error) {
		sb, err := startSandbox(context.Background(), m.cfg.RedisServer)
		if err != nil {
			return nil, err
		}
		return open(context.Background(), &session{sb: sb, rdb: sb.client(), tg: tg, budget: m.cfg.StepBudget})
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// runAcquire steps session id to A's acquire: A starts, then runs it.
func runAcquire(m *Manager, id string) (api.ExploreState, error) {
	ctx := context.Background()
	st, err := m.State(ctx, id)
	if err != nil {
		return st, err
	}
	for _, kind := range []string{action.Start, action.Run} {
		var body []byte
		for _, a := range st.Enabled {
			if a.Kind == kind && a.Client == "A" {
				body, _ = json.Marshal(a)
				break
			}
		}
		if body == nil {
			return st, fmt.Errorf("no %s of A among %v", kind, st.Enabled)
		}
		if st, err = m.Step(ctx, id, body); err != nil {
			return st, err
		}
	}
	return st, nil
}

// TestSandboxFiles: a script that reaches for a file of the host by
// every way Lua offers (loadfile, dofile, require, io, os, setfenv
// around a chunk, load and loadstring of a built string, the global
// table by a built name, a module, bytecode) gets nothing of it: the
// file's contents are in no answer, state or metric. The names are not
// checked here: this is the sandbox alone.
func TestSandboxFiles(t *testing.T) {
	redistest.RequireServer(t)
	secret := fmt.Sprintf("LOCKMARKET_ADMIN_TOKEN=%x", time.Now().UnixNano())
	path := filepath.Join(t.TempDir(), "token.env")
	if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LOCKMARKET_ADMIN_TOKEN", secret)
	m := New(Config{StepBudget: 5 * time.Second})
	defer m.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	p := fmt.Sprintf("%q", path)
	t.Run("scripts", func(t *testing.T) {
		for _, src := range []string{
			"return loadfile(" + p + ")()",
			"return dofile(" + p + ")",
			"return require(" + p + ")",
			"return io.open(" + p + "):read('*a')",
			"return io.lines(" + p + ")()",
			"return os.getenv('LOCKMARKET_ADMIN_TOKEN')",
			"return os.execute('cat " + path + "')",
			"local f = loadfile(" + p + ") setfenv(f, setmetatable({}, {__index = function(_, k) error(k, 0) end})) return f()",
			"return getfenv(0).loadfile(" + p + ")()",
			"local s, done = 'return lo' .. 'adfile(" + path + ")()', false\n" +
				"return load(function() if done then return nil end done = true return s end)()",
			"return loadstring('return i' .. 'o.open(\"" + path + "\"):read(\"*a\")')()",
			"return _G['load' .. 'file'](" + p + ")()",
			"return rawget(_G, 'dofile')(" + p + ")",
			"return package.loadlib(" + p + ", 'x')",
			"return debug.getregistry()",
			"return loadstring(string.dump(function() return 1 end))()",
			"return redis.call('MODULE', 'LOAD', " + p + ")",
			"return redis.call('CONFIG', 'SET', 'dir', '/')",
			"return redis.call('EVAL', 'return 1', 0)",
		} {
			t.Run(src, func(t *testing.T) {
				t.Parallel() // each on a sandbox of its own
				id := addUnchecked(t, m, t.Name(), src)
				defer m.Remove(id)
				st, err := runAcquire(m, id)
				if err == nil {
					t.Errorf("the step answered: %+v", st.Steps)
				}
				b, _ := json.Marshal(st)
				if e := fmt.Sprint(err); strings.Contains(e, secret) || strings.Contains(string(b), secret) {
					t.Errorf("the file's contents in the answer: %v", e)
				}
				t.Logf("%.200v", err)
			})
		}
	})
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(fmt.Sprint(fams), secret) {
		t.Error("the file's contents in the metrics")
	}
}

// TestSandboxIsolation: a script that reaches for another session's keys
// or the served Redis, or for the server (CONFIG, SHUTDOWN, DEBUG,
// SELECT, FLUSHALL, MIGRATE to the served Redis, CLIENT, ACL...), fails,
// and nothing outside its session changes: another session's key, the
// served Redis's keys; its own server still answers.
func TestSandboxIsolation(t *testing.T) {
	served := redistest.Real(t)
	before := redistest.Snapshot(t, served.Client)
	m := New(Config{StepBudget: 5 * time.Second})
	defer m.Close()
	other := addUnchecked(t, m, "b", "return 0")
	o, _ := m.store.Get(other)
	if err := o.rdb.Set(context.Background(), "{other}:mark", "kept", 0).Err(); err != nil {
		t.Fatal(err)
	}
	port := served.Server.Port()
	t.Run("scripts", func(t *testing.T) {
		for _, src := range []string{
			// what it reads is nil, as the key is not on its server; what
			// it writes is on its server only
			"error('read ' .. tostring(redis.call('GET', '{other}:mark')), 0)",
			"redis.call('SET', '{other}:mark', 'changed') error('wrote', 0)",
			"error('found ' .. table.concat(redis.call('KEYS', '*'), ' '), 0)",
			"redis.call('FLUSHALL') return 0",
			"redis.call('FLUSHDB') return 0",
			"redis.call('SELECT', 1) return 0",
			"redis.call('SWAPDB', 0, 1) return 0",
			"redis.call('CONFIG', 'SET', 'maxmemory', '0') return 0",
			"redis.call('SHUTDOWN', 'NOSAVE') return 0",
			"redis.call('DEBUG', 'SLEEP', 0) return 0",
			fmt.Sprintf("redis.call('SET', 'x', 1) redis.call('MIGRATE', '127.0.0.1', %d, 'x', 0, 1000) return 0", port),
			"redis.call('CLIENT', 'KILL', 'TYPE', 'normal') return 0",
			"redis.call('ACL', 'SETUSER', 'default', 'on', '+@all') return 0",
			"redis.call('REPLICAOF', '127.0.0.1', " + fmt.Sprint(port) + ") return 0",
			"redis.call('SCRIPT', 'FLUSH') return 0",
			"redis.call('FUNCTION', 'FLUSH') return 0",
			"redis.setresp(3) redis.call('HELLO', 3) return 0",
		} {
			t.Run(src, func(t *testing.T) {
				t.Parallel() // each on a sandbox of its own
				id := addUnchecked(t, m, t.Name(), src)
				defer m.Remove(id)
				_, err := runAcquire(m, id)
				if !errors.Is(err, api.ErrInvalid) || strings.Contains(err.Error(), "kept") {
					t.Errorf("%v, want ErrInvalid, without the other session's value", err)
				}
				s, _ := m.store.Get(id)
				if err := s.sb.admin.Ping(context.Background()).Err(); err != nil {
					t.Errorf("the session's own server after it: %v", err)
				}
			})
		}
	})
	if v, err := o.rdb.Get(context.Background(), "{other}:mark").Result(); err != nil || v != "kept" {
		t.Errorf("the other session's key: %q, %v", v, err)
	}
	if after := redistest.Snapshot(t, served.Client); !maps.Equal(before, after) {
		t.Errorf("the served Redis changed: %v, then %v", before, after)
	}
}

// settle bounds, on the wall clock, the waits of the sandbox tests for
// what happens in other processes or in the background (a script
// spinning, a killed process reaped, goroutines ending): each takes
// milliseconds, and a minute is a bound no machine's load reaches
// (docs/testing.md lists it).
const settle = time.Minute

// TestSandboxRemoveAtOnce: a session whose step spins in a script that
// SCRIPT KILL cannot stop (it wrote first) is removed at once, well
// before its budget, and leaves nothing behind: no process, no
// directory, no goroutine.
func TestSandboxRemoveAtOnce(t *testing.T) {
	redistest.RequireServer(t)
	// Remove must not wait for the step's budget: a quarter of it is a
	// bound no machine's load reaches, and a Remove that waited for the
	// budget would take all of it and fail.
	const budget = 10 * time.Minute
	m := New(Config{StepBudget: budget})
	defer m.Close()
	g0 := runtime.NumGoroutine()
	id := addUnchecked(t, m, "c", "redis.call('SET', KEYS[1] .. 'w', 1) while true do end")
	s, _ := m.store.Get(id)
	pid, dir := s.sb.srv.Pid(), s.sb.srv.Dir()
	stepped := make(chan error, 1)
	go func() {
		_, err := runAcquire(m, id)
		stepped <- err
	}()
	// Wait until the script spins: the server answers BUSY.
	for deadline := time.Now().Add(settle); ; {
		err := s.sb.admin.Ping(context.Background()).Err()
		if err != nil && strings.HasPrefix(err.Error(), "BUSY") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the script does not spin: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	if err := m.Remove(id); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > budget/4 {
		t.Errorf("Remove took %v, as long as the step's budget", d)
	}
	if err := <-stepped; err == nil {
		t.Error("the step answered")
	}
	// The process was sent SIGKILL; it is reaped, and its directory
	// removed, in the background.
	for deadline := time.Now().Add(settle); ; time.Sleep(10 * time.Millisecond) {
		err := syscall.Kill(pid, 0)
		_, serr := os.Stat(dir)
		if errors.Is(err, syscall.ESRCH) && errors.Is(serr, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v after Remove: the sandbox's process %d: %v; its directory: %v", settle, pid, err, serr)
		}
	}
	for deadline := time.Now().Add(settle); runtime.NumGoroutine() > g0; {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), g0, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
