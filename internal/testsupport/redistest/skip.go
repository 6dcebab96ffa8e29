package redistest

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/lockmarket/lockmarket/internal/redis/redisserver"
)

// Need is what a test needs beyond miniredis.
type Need string

// What a test may need.
const (
	NeedServer  Need = "real-server" // a redis-server binary
	NeedCluster Need = "cluster"     // redis-server and redis-cli, and time for a cluster
	NeedBrowser Need = "browser"     // a Chromium binary
)

// CIEnv is the environment variable that, set to true, turns every skip
// of Skip into a failure: on CI nothing may pass on miniredis alone.
const CIEnv = "CI"

// Reasons of the skips.
const (
	reasonNoServer = "redis-server not on PATH"
	reasonNoCLI    = "redis-cli not on PATH"
	reasonShort    = "-short"
)

// skips counts the skips of the test binary, for Main.
var skips tally

// mainCalled records that the package's TestMain went through Main.
var mainCalled atomic.Bool

// Main runs the package's tests, saying on the terminal (talk.go) that
// redis-server is missing, once per go command, and that a slow package
// is still running; then it prints one line that says which
// tests were skipped (or failed under CI=true) for want of a real server,
// a cluster or a browser, and why. Every package whose tests use redistest
// calls it from its TestMain:
//
//	func TestMain(m *testing.M) { redistest.Main(m) }
//
// Each of after runs once the tests have ended, before the process exits:
// it closes what the package's tests shared (a browser).
func Main(m *testing.M, after ...func()) {
	mainCalled.Store(true)
	stop := talk()
	code := m.Run()
	for _, f := range after {
		f()
	}
	stop()
	if s := skips.summary(); s != "" {
		fmt.Println(s)
	}
	os.Exit(code)
}

// checkMain fails the test when its package's TestMain does not call Main,
// which would leave its skips unreported.
func checkMain(tb testing.TB) {
	tb.Helper()
	if !mainCalled.Load() {
		tb.Fatal("redistest: the package needs func TestMain(m *testing.M) { redistest.Main(m) }")
	}
}

// Skip skips the test because what it needs is missing (reason says
// what), and counts the skip for Main's summary. Under CI=true it fails
// the test instead.
func Skip(tb testing.TB, need Need, reason string) {
	tb.Helper()
	checkMain(tb)
	skips.skip(tb, need, reason, onCI())
}

// SkipShort skips the test under -short, as Skip does (so under CI=true
// a -short run fails it).
func SkipShort(tb testing.TB, need Need) {
	tb.Helper()
	if testing.Short() {
		Skip(tb, need, reasonShort)
	}
}

// RequireServer skips the test, as Skip does, when there is no
// redis-server binary.
func RequireServer(tb testing.TB) {
	tb.Helper()
	if _, err := redisserver.Binary(); err != nil {
		Skip(tb, NeedServer, reasonNoServer)
	}
}

// requireCluster skips the test, as Skip does, under -short or when
// redis-server or redis-cli is missing.
func requireCluster(tb testing.TB) {
	tb.Helper()
	SkipShort(tb, NeedCluster)
	if _, err := redisserver.Binary(); err != nil {
		Skip(tb, NeedCluster, reasonNoServer)
	}
	if _, err := exec.LookPath("redis-cli"); err != nil {
		Skip(tb, NeedCluster, reasonNoCLI)
	}
}

// onCI reports whether CI=true (or 1) is set.
func onCI() bool {
	ci, err := strconv.ParseBool(os.Getenv(CIEnv))
	return err == nil && ci
}

// skipKey is one kind of skip.
type skipKey struct {
	need   Need
	reason string
	failed bool // under CI=true
}

// tally counts skips by kind.
type tally struct {
	mu     sync.Mutex
	counts map[skipKey]int
}

// skip counts one skip and skips tb, or fails it when ci is set.
func (t *tally) skip(tb testing.TB, need Need, reason string, ci bool) {
	tb.Helper()
	t.mu.Lock()
	if t.counts == nil {
		t.counts = map[skipKey]int{}
	}
	t.counts[skipKey{need, reason, ci}]++
	t.mu.Unlock()
	if ci {
		tb.Fatalf("%s test cannot run: %s (under %s=true it may not be skipped)", need, reason, CIEnv)
		return
	}
	tb.Skipf("%s test skipped: %s", need, reason)
}

// summary is one line that counts the skips by need and reason, or ""
// when there were none: "redistest: 37 real-server tests skipped: redis-server not on PATH".
func (t *tally) summary() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	keys := make([]skipKey, 0, len(t.counts))
	for k := range t.counts {
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return ""
	}
	order := []Need{NeedServer, NeedCluster, NeedBrowser}
	slices.SortFunc(keys, func(a, b skipKey) int {
		if c := slices.Index(order, a.need) - slices.Index(order, b.need); c != 0 {
			return c
		}
		if a.failed != b.failed {
			if a.failed {
				return 1
			}
			return -1
		}
		return strings.Compare(a.reason, b.reason)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		n := t.counts[k]
		tests := "tests"
		if n == 1 {
			tests = "test"
		}
		verb := "skipped"
		if k.failed {
			verb = "failed (" + CIEnv + "=true)"
		}
		parts[i] = fmt.Sprintf("%d %s %s %s: %s", n, k.need, tests, verb, k.reason)
	}
	return "redistest: " + strings.Join(parts, "; ")
}
