package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// refuseBound is how long a refusal of a hostile recipe directory may
// take. A refusal takes milliseconds; what the bound catches is one that
// never comes (a FIFO opened for reading blocks until a writer opens it),
// so it is a minute, which no machine's load reaches (docs/testing.md,
// "Time in the tests").
const refuseBound = time.Minute

// TestExploreRecipeDirHostile: "simulate explore -recipe-dir" on a
// directory made to hurt the process or the server exits 2 within
// refuseBound, with one line naming the file or the field and no usage
// hint, and the server still answers PING with nothing written.
func TestExploreRecipeDirHostile(t *testing.T) {
	b := redistest.Real(t)
	rdb := b.NewClient(t)
	ctx := context.Background()
	manifest := func(dir, s string) {
		if err := os.WriteFile(filepath.Join(dir, "recipe.json"), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	good := `{"ops": {
  "acquire": {"script": "acquire.lua", "keys": ["${lock}"], "args": ["${token}", "${ttl}"], "ok": [1]},
  "release": {"steps": [{"cmd": ["DEL", "${lock}"]}], "ok": [1]}}}`
	withScript := func(prep func(p string) error) string {
		dir := t.TempDir()
		manifest(dir, good)
		if err := prep(filepath.Join(dir, "acquire.lua")); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	outside := filepath.Join(t.TempDir(), "x.lua")
	os.WriteFile(outside, []byte("return 1"), 0o644)
	withStep := func(cmd string) string {
		dir := t.TempDir()
		manifest(dir, `{"ops": {"acquire": {"steps": [{"cmd": ["SET", "${lock}", "1", "NX"]}], "ok": ["OK"]},
  "release": {"steps": [{"cmd": `+cmd+`}], "ok": [1]}}}`)
		return dir
	}
	million := t.TempDir()
	// A million steps, each as short as a step can be written: 3 MB.
	manifest(million, `{"ops": {"acquire": {"steps": [`+strings.Repeat(`{},`, 999_999)+
		`{}], "ok": [1]}, "release": {"steps": [{"cmd": ["DEL", "${lock}"]}], "ok": [1]}}}`)
	for _, tc := range []struct{ name, dir, want string }{
		{"link to /dev/zero", withScript(func(p string) error { return os.Symlink("/dev/zero", p) }),
			"ops.acquire.script: acquire.lua leads to /dev/zero, outside the recipe's directory"},
		{"FIFO", withScript(func(p string) error { return syscall.Mkfifo(p, 0o644) }),
			"ops.acquire.script: acquire.lua is not a regular file (a FIFO)"},
		{"link outside", withScript(func(p string) error { return os.Symlink(outside, p) }),
			"ops.acquire.script: acquire.lua leads to " + outside},
		{"300 MB", withScript(func(p string) error {
			f, err := os.Create(p)
			if err == nil {
				err = f.Truncate(300 << 20)
				f.Close()
			}
			return err
		}), "ops.acquire.script: acquire.lua is larger than the limit of 1024 KiB for a script"},
		{"a million steps", million, "recipe.json: recipe.json is larger than the limit of 1024 KiB for a manifest"},
		{"SHUTDOWN", withStep(`["SHUTDOWN", "NOSAVE"]`), "ops.release.steps[0].cmd[0]: SHUTDOWN is not a data command"},
		{"CONFIG SET", withStep(`["CONFIG", "SET", "maxmemory", "1"]`),
			"ops.release.steps[0].cmd[0]: CONFIG is not a data command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			start := time.Now()
			err := run(ctx, []string{"explore", "-redis", "redis://" + b.Addr(), "-recipe-dir", tc.dir}, &stdout, &stderr)
			took := time.Since(start)
			said := stderr.String()
			if code := exitCode(err); code != 2 || !strings.Contains(said, tc.want) ||
				strings.Count(said, "\n") != 1 || strings.Contains(said, "for usage") {
				t.Errorf("exit %d (%v), stderr %q; want 2, one line naming %q, no usage hint",
					code, err, said, tc.want)
			}
			if took > refuseBound {
				t.Errorf("took %v; want at most %v", took, refuseBound)
			}
			if err := rdb.Ping(ctx).Err(); err != nil {
				t.Fatalf("the server no longer answers PING: %v", err)
			}
			if n, err := rdb.DBSize(ctx).Result(); err != nil || n != 0 {
				t.Errorf("the server holds %d keys (%v); want none written", n, err)
			}
		})
	}
	if v, err := rdb.ConfigGet(ctx, "maxmemory").Result(); err != nil || v["maxmemory"] != "0" {
		t.Errorf("maxmemory %v (%v): the server's configuration changed", v, err)
	}
}

// TestExploreNoVacuousVerdict: a manifest whose acquire's ok never
// matches, or whose release's ok never matches, exits 2 naming the op
// and its ok (the search saw nothing it was about); one that names a key
// outside the namespace exits 2 naming the key; an extension that hands
// EXPIRE milliseconds exits 1, the lease broken.
func TestExploreNoVacuousVerdict(t *testing.T) {
	b := redistest.Real(t)
	set := func(acquireOK, releaseOK, key string) string {
		return `{"ops": {
  "acquire": {"steps": [{"cmd": ["SET", "` + key + `", "${token}", "NX", "PX", "${ttl}"]}], "ok": ` + acquireOK + `},
  "release": {"steps": [{"cmd": ["GET", "${lock}"], "save": "v"},
    {"cmd": ["DEL", "${lock}"], "if": {"eq": ["${v}", "${token}"]}}], "ok": ` + releaseOK + `}}}`
	}
	dir := func(manifest string, files map[string]string) string {
		d := t.TempDir()
		files["recipe.json"] = manifest
		for name, s := range files {
			if err := os.WriteFile(filepath.Join(d, name), []byte(s), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	expire := map[string]string{"extend.lua": `if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('EXPIRE', KEYS[1], ARGV[2]) end
return 0`}
	leaseMS := `{"ttl_unit": "ms", "ops": {
  "acquire": {"steps": [{"cmd": ["SET", "${lock}", "${token}", "NX", "PX", "${ttl}"]}], "ok": ["OK"]},
  "release": {"steps": [{"cmd": ["DEL", "${lock}"]}], "ok": [1]},
  "extend": {"script": "extend.lua", "keys": ["${lock}"], "args": ["${token}", "${ttl}"], "ok": [1]}}}`
	for _, tc := range []struct {
		name, dir string
		code      int
		want      string
	}{
		{"acquire never ok", dir(set(`[1]`, `[1]`, "${lock}"), map[string]string{}), 2,
			"ops.acquire.ok [1] matched none of its"},
		{"release never ok", dir(set(`["OK"]`, `["1"]`, "${lock}"), map[string]string{}), 2,
			`ops.release.ok ["1"] matched none of its`},
		{"key outside", dir(set(`["OK"]`, `[1]`, "mylock"), map[string]string{}), 2,
			`ops.acquire.steps[0].cmd[1]: key "mylock" is not made from ${lock}`},
		{"EXPIRE given ms", dir(leaseMS, expire), 1, "lease: at t=0s, A's EVAL extend.lua lock:L left the lock's key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), []string{"explore", "-redis", "redis://" + b.Addr(), "-recipe-dir", tc.dir,
				"-clients", "2", "-faults", "crash", "-bound", "ticks=1,attempts=1"}, &stdout, &stderr)
			out := strings.Join(strings.Fields(stdout.String()+stderr.String()), " ")
			if code := exitCode(err); code != tc.code || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d (%v); want %d naming %q:\n%s%s", code, err, tc.code, tc.want, stdout.String(),
					stderr.String())
			}
		})
	}
}
