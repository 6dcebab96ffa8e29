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
