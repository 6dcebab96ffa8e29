package targets_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/lockmarket/lockmarket/internal/explore/targets"
)

// goodManifest is a small working manifest whose acquire is acquire.lua.
const goodManifest = `{"ops": {
  "acquire": {"script": "acquire.lua", "keys": ["${lock}"], "args": ["${token}", "${ttl}"], ` +
	`"ok": [1]},
  "release": {"steps": [{"cmd": ["DEL", "${lock}"]}], "ok": [1]}}}`

// sparse makes a file of size bytes that takes no room on disk.
func sparse(t *testing.T, path string, size int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
}

// hostileRecipeDirs are recipe directories made to hurt the process that
// loads them, or the server: each is refused with an error naming the
// file or the field.
func hostileRecipeDirs(t *testing.T) []struct{ name, dir, want string } {
	t.Helper()
	outside := filepath.Join(t.TempDir(), "outside.lua")
	if err := os.WriteFile(outside, []byte("return 1"), 0o644); err != nil {
		t.Fatal(err)
	}
	withScript := func(prep func(dir string)) string {
		dir := writeRecipe(t, goodManifest, nil)
		prep(filepath.Join(dir, "acquire.lua"))
		return dir
	}
	link := func(to string) func(string) {
		return func(p string) {
			if err := os.Symlink(to, p); err != nil {
				t.Fatal(err)
			}
		}
	}
	steps := func(n int) string {
		s := strings.Repeat(`{"cmd": ["GET", "${lock}"]},`, n-1) + `{"cmd": ["GET", "${lock}"]}`
		return `{"ops": {"acquire": {"steps": [` + s + `], "ok": ["OK"]}, "release": {"steps": ` +
			`[{"cmd": ["DEL", "${lock}"]}], "ok": [1]}}}`
	}
	step := func(cmd string) string {
		return writeRecipe(
			t,
			`{"ops": {"acquire": {"steps": [{"cmd": ["SET", "${lock}", "${token}", "NX", "PX", `+
				`"${ttl}"]}], "ok": ["OK"]},
  "release": {"steps": [{"cmd": `+cmd+`}], "ok": [1]}}}`,
			nil,
		)
	}
	bigManifest := t.TempDir()
	sparse(t, filepath.Join(bigManifest, targets.ManifestFile), 300<<20)
	fifoManifest := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(fifoManifest, targets.ManifestFile), 0o644); err != nil {
		t.Fatal(err)
	}
	zeroManifest := t.TempDir()
	link("/dev/zero")(filepath.Join(zeroManifest, targets.ManifestFile))
	// A million steps, each as short as a step can be written: 3 MB.
	million := writeRecipe(
		t,
		`{"ops": {"acquire": {"steps": [`+strings.Repeat(`{},`, 999_999)+`{}], "ok": [1]}}}`,
		nil,
	)
	return []struct{ name, dir, want string }{
		{"script a link to /dev/zero", withScript(link("/dev/zero")),
			"recipe.json: ops.acquire.script: acquire.lua leads to /dev/zero, outside the " +
				"recipe's directory"},
		{"script a FIFO", withScript(func(p string) {
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
		}), "recipe.json: ops.acquire.script: acquire.lua is not a regular file (a FIFO)"},
		{
			"script a link outside",
			withScript(link(outside)),
			"recipe.json: ops.acquire.script: acquire.lua leads to " + outside,
		},
		{
			"script ../",
			writeRecipe(t, strings.Replace(goodManifest, "acquire.lua", "../outside.lua", 1), nil),
			"recipe.json: ops.acquire.script: ../outside.lua: not a file in the recipe's directory",
		},
		{
			"script absolute",
			writeRecipe(t, strings.Replace(goodManifest, "acquire.lua", outside, 1), nil),
			"recipe.json: ops.acquire.script: " + outside + ": not a file in the recipe's " +
				"directory",
		},
		{"script a directory", withScript(func(p string) { os.Mkdir(p, 0o755) }),
			"recipe.json: ops.acquire.script: acquire.lua is not a regular file (a directory)"},
		{"script of 300 MB", withScript(func(p string) { sparse(t, p, 300<<20) }),
			"recipe.json: ops.acquire.script: acquire.lua is larger than the limit of 1024 KiB " +
				"for a script"},
		{
			"manifest of 300 MB",
			bigManifest,
			"recipe.json: recipe.json is larger than the limit of 1024 KiB for a manifest",
		},
		{
			"manifest a FIFO",
			fifoManifest,
			"recipe.json: recipe.json is not a regular file (a FIFO)",
		},
		{
			"manifest a link to /dev/zero",
			zeroManifest,
			"recipe.json: recipe.json leads to /dev/zero, outside",
		},
		{
			"manifest of a million steps",
			million,
			"recipe.json: recipe.json is larger than the limit of 1024 KiB",
		},
		{"an op of 1,000 steps", writeRecipe(t, steps(1000), nil),
			"recipe.json: ops.acquire.steps: 1000 steps, more than the limit of 64 steps per op"},
		{
			"SHUTDOWN",
			step(`["SHUTDOWN", "NOSAVE"]`),
			"recipe.json: ops.release.steps[0].cmd[0]: SHUTDOWN is not a data command",
		},
		{"CONFIG SET", step(`["CONFIG", "SET", "maxmemory", "1"]`),
			"recipe.json: ops.release.steps[0].cmd[0]: CONFIG is not a data command"},
		{
			"DEBUG",
			step(`["debug", "sleep", "10"]`),
			"recipe.json: ops.release.steps[0].cmd[0]: DEBUG is not a data command",
		},
		{
			"FLUSHALL",
			step(`["FLUSHALL"]`),
			"recipe.json: ops.release.steps[0].cmd[0]: FLUSHALL is a command on every key",
		},
		{
			"SCRIPT FLUSH",
			step(`["SCRIPT", "FLUSH"]`),
			"recipe.json: ops.release.steps[0].cmd[0]: SCRIPT is not a data command",
		},
		{
			"REPLICAOF",
			step(`["REPLICAOF", "127.0.0.1", "1"]`),
			"recipe.json: ops.release.steps[0].cmd[0]: REPLICAOF is not",
		},
		{
			"CLIENT KILL",
			step(`["CLIENT", "KILL", "TYPE", "normal"]`),
			"recipe.json: ops.release.steps[0].cmd[0]: CLIENT is not",
		},
		{
			"SWAPDB",
			step(`["SWAPDB", "0", "1"]`),
			"recipe.json: ops.release.steps[0].cmd[0]: SWAPDB is not a data command",
		},
		{
			"MIGRATE",
			step(`["MIGRATE", "127.0.0.1", "1", "${lock}", "0", "1"]`),
			"recipe.json: ops.release.steps[0].cmd[0]: MIGRATE is not",
		},
		{"a key outside", step(`["DEL", "${lock}", "other"]`),
			`recipe.json: ops.release.steps[0].cmd[2]: key "other" is not made from ${lock}`},
		{
			"a script's key outside",
			writeRecipe(
				t,
				strings.Replace(goodManifest, `"keys": ["${lock}"]`, `"keys": ["${client}"]`, 1),
				map[string]string{
					"acquire.lua": "return 1",
				},
			),
			`recipe.json: ops.acquire.keys[0]: key "${client}" is not made from ${lock}`,
		},
	}
}

// TestRecipeDirHostile: a recipe directory that would hurt the process
// loading it (a link to /dev/zero, a FIFO, a file outside it, a file of
// 300 MB, a million steps) or the server (SHUTDOWN, CONFIG SET, a key
// outside the namespace) is refused, naming the file or the field.
func TestRecipeDirHostile(t *testing.T) {
	for _, tc := range hostileRecipeDirs(t) {
		t.Run(tc.name, func(t *testing.T) {
			_, err := targets.LoadRecipe(tc.dir)
			if !errors.Is(err, targets.ErrManifest) || !strings.HasPrefix(err.Error(), tc.want) ||
				strings.Contains(err.Error(), "\n") {
				t.Fatalf("got %v; want ErrManifest, one line beginning %q", err, tc.want)
			}
		})
	}
}

// TestRecipeDirLinkInside: a script that is a link to a file inside the
// directory is read; so is the directory itself through a link.
func TestRecipeDirLinkInside(t *testing.T) {
	dir := writeRecipe(t, goodManifest, map[string]string{"real.lua": "return 1"})
	if err := os.Symlink("real.lua", filepath.Join(dir, "acquire.lua")); err != nil {
		t.Fatal(err)
	}
	via := filepath.Join(t.TempDir(), "via")
	if err := os.Symlink(dir, via); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, via} {
		if _, err := targets.LoadRecipe(d); err != nil {
			t.Errorf("%s: %v", d, err)
		}
	}
}
