package main

import (
	"bytes"
	"context"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// TestExploreRecipeConfined: a recipe explored with -redis auto, while
// REDIS_URL names another local Redis (a market's, with alice's funds),
// runs on a confined private server: its script's MIGRATE of a hash
// into that Redis (caught by pcall or not), SORT ... STORE, SWAPDB,
// MOVE, COPY ... DB, SELECT, FLUSHALL, FLUSHDB and CONFIG SET change
// nothing there, and the run exits 2 naming the command refused (or the
// script's error).
func TestExploreRecipeConfined(t *testing.T) {
	victim := redistest.Real(t)
	rdb := victim.NewClient(t)
	ctx := context.Background()
	if err := rdb.HSet(ctx, "{market}:users:alice", "name", "alice", "funds", "500").Err(); err != nil {
		t.Fatal(err)
	}
	before := redistest.Snapshot(t, rdb)
	t.Setenv("REDIS_URL", "redis://"+victim.Addr())
	host, port, _ := strings.Cut(victim.Addr(), ":")
	migrate := `redis.call('HSET', KEYS[1] .. 'x', 'name', 'alice', 'funds', '999999')
%s('MIGRATE', '` + host + `', '` + port + `', '', 0, 1000, 'REPLACE', 'KEYS', '{market}:users:alice')
`
	for _, tc := range []struct{ name, lua, want string }{
		{"MIGRATE caught by pcall", strings.Replace(migrate, "%s", "redis.pcall", 1),
			"the server refused the recipe MIGRATE in a script"},
		{"MIGRATE", strings.Replace(migrate, "%s", "redis.call", 1), "MIGRATE in a script"},
		{"SORT STORE", "redis.call('SORT', KEYS[1] .. 'l', 'STORE', KEYS[1] .. 's')\n", "SORT in a script"},
		{"SWAPDB", "redis.pcall('SWAPDB', 0, 1)\n", "SWAPDB in a script"},
		{"MOVE", "redis.call('MOVE', KEYS[1], 1)\n", "MOVE in a script"},
		{"SELECT", "redis.call('SELECT', 1)\n", "SELECT in a script"},
		{"FLUSHALL", "redis.pcall('FLUSHALL')\n", "FLUSHALL in a script"},
		{"FLUSHDB", "redis.call('FLUSHDB')\n", "FLUSHDB in a script"},
		// Not refusals of the server's user, but a command no script may
		// send, and a database that does not exist: the script's error
		// is the recipe's.
		{"CONFIG SET", "redis.call('CONFIG', 'SET', 'dir', '/')\n", "not allowed from script"},
		{"COPY DB", "redis.call('SET', KEYS[1] .. 'c', 1) redis.call('COPY', KEYS[1] .. 'c', KEYS[1] .. 'd', 'DB', 1)\n",
			"DB index is out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{
				"recipe.json": `{"ops": {
  "acquire": {"script": "acquire.lua", "keys": ["${lock}"], "args": ["${token}", "${ttl}"], "ok": [1]},
  "release": {"steps": [{"cmd": ["DEL", "${lock}"]}], "ok": [1]}}}`,
				"acquire.lua": tc.lua + `if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
return 0`,
			}
			for name, s := range files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var stdout, stderr bytes.Buffer
			err := run(ctx, []string{"explore", "-redis", "auto", "-recipe-dir", dir, "-clients", "2",
				"-faults", "none", "-bound", "attempts=1,ticks=1"}, &stdout, &stderr)
			said := strings.Join(strings.Fields(stderr.String()), " ")
			if code := exitCode(err); code != 2 || !strings.Contains(said, tc.want) {
				t.Errorf("exit %d (%v), stderr %q; want 2 naming %q", code, err, stderr.String(), tc.want)
			}
			if !strings.Contains(said, "confined private redis-server") || strings.Contains(said, "REDIS_URL") {
				t.Errorf("not run on a confined private server: %q", stderr.String())
			}
			if after := redistest.Snapshot(t, rdb); !maps.Equal(after, before) {
				t.Errorf("the other Redis changed:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

// writeRecipe writes a recipe whose acquire script is acquire into a new
// directory named name (under a temporary one), and returns its path.
func writeRecipe(t *testing.T, name, manifestName, acquire string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"recipe.json": `{"name": ` + manifestName + `, "ops": {
  "acquire": {"script": "acquire.lua", "keys": ["${lock}"], "args": ["${token}", "${ttl}"], "ok": [1]},
  "release": {"steps": [{"cmd": ["DEL", "${lock}"]}], "ok": [1]}}}`,
		"acquire.lua": acquire,
	}
	for name, s := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestExploreNamesEscaped: a recipe whose name and directory hold
// control characters (a clear screen, a carriage return, a false "all
// properties hold") and a path is printed with them escaped, on stdout
// and stderr, as a table or JSON, and its timelines are written inside
// -out under a name without them.
func TestExploreNamesEscaped(t *testing.T) {
	redistest.RequireServer(t)
	t.Setenv("REDIS_URL", "")
	// SET NX without a lease: a crash leaves the lock held (liveness).
	dir := writeRecipe(t, "dir\x1b[2J\rname", `"../../x\u001b[2J\rNo violation: all properties hold.\u202e"`,
		`if redis.call('SET', KEYS[1], ARGV[1], 'NX') then return 1 end return 0`)
	out := t.TempDir()
	for _, format := range []string{"table", "json"} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), []string{"explore", "-recipe-dir", dir, "-clients", "2", "-faults", "crash",
			"-first", "-format", format, "-out", filepath.Join(out, format)}, &stdout, &stderr)
		if code := exitCode(err); code != 1 {
			t.Fatalf("%s: exit %d (%v); want 1 (liveness):\n%s%s", format, code, err, stdout.String(), stderr.String())
		}
		all := stdout.String() + stderr.String()
		if strings.ContainsAny(all, "\x1b\r\u202e") {
			t.Errorf("%s: a control character printed:\n%q", format, all)
		}
		if !strings.Contains(all, `\x1b[2J`) && !strings.Contains(stdout.String(), `\u001b[2J`) {
			t.Errorf("%s: the name not shown escaped:\n%s", format, all)
		}
	}
	err := filepath.WalkDir(filepath.Dir(out), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.HasPrefix(p, filepath.Dir(dir)) &&
			(!strings.HasPrefix(p, out+"/") || strings.ContainsAny(d.Name(), "\x1b\r")) {
			t.Errorf("a timeline written as %q", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestExploreLoopingRecipe: a recipe whose take never ends exits 2, the
// recipe's fault, not 1 (a violation), saying why.
func TestExploreLoopingRecipe(t *testing.T) {
	redistest.SkipShort(t, redistest.NeedServer) // Redis answers BUSY after 5 s
	redistest.RequireServer(t)
	t.Setenv("REDIS_URL", "")
	dir := writeRecipe(t, "loop", `"loop"`, "while true do end return 1")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"explore", "-recipe-dir", dir, "-clients", "2", "-faults", "none",
		"-first"}, &stdout, &stderr)
	said := strings.Join(strings.Fields(stderr.String()), " ")
	if code := exitCode(err); code != 2 || !strings.Contains(said, "a loop that never ends?") {
		t.Errorf("exit %d (%v), stderr %q; want 2 naming the loop", code, err, stderr.String())
	}
}
