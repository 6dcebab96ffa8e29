package docs_test

import (
	"archive/zip"
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// module is this module's path; releaseVersion a version of the tagged
// scheme (vMAJOR.MINOR.PATCH, CHANGELOG.md) for the test's proxy.
const (
	module         = "github.com/lockmarket/lockmarket"
	releaseVersion = "v0.1.0"
)

// TestInstallFromProxy lays out a module proxy in a temporary directory
// holding this tree as module version releaseVersion, zipped as the go
// command would publish it (without the nested modules bench/ and
// examples/bring-your-own), and checks, offline, with an empty module
// cache, what a user of a published release would run: "go install
// .../cmd/simulate@vX" and ".../cmd/market@vX" resolve the module and
// every dependency and plan their builds (-n: the builds themselves are
// what the rest of the tests compile), and examples/bring-your-own,
// its replace dropped and the release required instead, loads.
func TestInstallFromProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("extracts every dependency into an empty module cache")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	cache := strings.TrimSpace(goEnv(t, "GOMODCACHE"))
	proxy := t.TempDir()
	dir := filepath.Join(proxy, module, "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"list":                   []byte(releaseVersion + "\n"),
		releaseVersion + ".info": []byte(`{"Version":"` + releaseVersion + `","Time":"2026-11-27T00:00:00Z"}`),
		releaseVersion + ".mod":  gomod,
		releaseVersion + ".zip":  moduleZip(t, root),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	work := t.TempDir()
	env := append(os.Environ(),
		"GOPROXY=file://"+filepath.ToSlash(proxy)+",file://"+filepath.ToSlash(filepath.Join(cache, "cache", "download")),
		"GOSUMDB=off", "GOFLAGS=-modcacherw", "GOWORK=off", "GOTOOLCHAIN=local",
		"GOMODCACHE="+filepath.Join(work, "mod"), "GOBIN="+filepath.Join(work, "bin"))
	start := time.Now()
	for _, cmd := range []string{"simulate", "market"} {
		out := goCmd(t, work, env, "install", "-n", module+"/cmd/"+cmd+"@"+releaseVersion)
		t.Logf("go install -n .../cmd/%s@%s: %v", cmd, releaseVersion, time.Since(start).Round(time.Millisecond))
		if !strings.Contains(out, module+"@"+releaseVersion) {
			t.Errorf("go install %s@%s does not build from the release:\n%.2000s", cmd, releaseVersion, out)
		}
	}

	// examples/bring-your-own, as its README says to use it outside this
	// repository.
	byo := filepath.Join(work, "bring-your-own")
	if err := os.CopyFS(byo, os.DirFS(filepath.Join(root, "examples", "bring-your-own"))); err != nil {
		t.Fatal(err)
	}
	goCmd(t, byo, env, "mod", "edit", "-dropreplace="+module, "-require="+module+"@"+releaseVersion)
	out := goCmd(t, byo, env, "list", "-mod=mod", "-deps", "-test", "./...")
	t.Logf("bring-your-own loaded: %v", time.Since(start).Round(time.Millisecond))
	if !strings.Contains(out, module+"/explore\n") {
		t.Errorf("bring-your-own does not load the explorer from the release:\n%.2000s", out)
	}
}

// moduleZip is the module zip of the tree at root: every regular file
// but .git and the directories of nested modules, under module@version/.
func moduleZip(t *testing.T, root string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" || d.Name() == "vendor" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		// Stored, not deflated: the go command reads either, and the tree
		// is mostly small files and PNGs.
		w, err := zw.CreateHeader(&zip.FileHeader{Name: module + "@" + releaseVersion + "/" + filepath.ToSlash(rel),
			Method: zip.Store})
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return string(out)
}

// goCmd runs the go command in dir with env and returns its output; a
// failure fails the test.
func goCmd(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
