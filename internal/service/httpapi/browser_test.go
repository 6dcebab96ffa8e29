package httpapi

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market"
)

// screenshotEnv names a file to which TestBrowser writes its screenshot of
// the demo page (PNG); by default it goes to the test's temporary dir.
const screenshotEnv = "LOCKMARKET_SCREENSHOT"

// chromium finds a Chromium or Chrome binary, or returns "".
func chromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// browser is the headless Chromium the package's browser tests of one
// tab share, started by the first of them and closed by TestMain after
// the last. Each test opens a browser context of its own in it
// (browserTab: as separate as an incognito window, with its own cookies
// and storage), which costs a tab where a browser of its own costs a
// process to start. TestBrowserClass keeps a browser of its own, as
// its class of tabs is most of a browser's work: with the class in the
// shared browser, a run at a load of 20 on 2 cores ran out another
// test's 2-minute wait.
var browser struct {
	once  sync.Once
	ctx   context.Context // the browser's
	close func()
	err   error
}

// browserTab opens a tab in a new browser context of the shared browser,
// starting the browser first if no test has; cancel closes the tab and
// its browser context. Without chromium it skips t (fails it under
// CI=true).
func browserTab(t *testing.T) (ctx context.Context, cancel context.CancelFunc) {
	t.Helper()
	bin := chromium()
	if bin == "" {
		redistest.Skip(t, redistest.NeedBrowser, "chromium not on PATH")
	}
	browser.once.Do(func() {
		// The profile is removed once the browser has gone, again if a
		// process of Chromium's that outlived it was still writing there.
		profile, err := os.MkdirTemp("", "lockmarket-chromium-")
		if err != nil {
			browser.err = err
			return
		}
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
			chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
			chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
			chromedp.Flag("disable-quic", true),
			chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true), chromedp.Flag("disable-default-apps", true),
			chromedp.Flag("disable-extensions", true),
			chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("no-pings", true),
			chromedp.UserDataDir(profile), chromedp.WindowSize(1280, 1000))
		bctx, cancelBrowser := chromedp.NewContext(actx)
		browser.ctx = bctx
		browser.close = func() {
			cancelBrowser()
			cancelAlloc()
			if err := removeProfile(profile); err != nil {
				fmt.Fprintf(os.Stderr, "the browser's profile %s is left behind: %v\n", profile, err)
			}
		}
		browser.err = chromedp.Do(bctx) // start it
	})
	if browser.err != nil {
		t.Fatalf("start chromium: %v", browser.err)
	}
	return chromedp.NewContext(browser.ctx, chromedp.WithNewBrowserContext())
}

// closeBrowser closes the shared browser, if a test started it.
func closeBrowser() {
	if browser.close != nil {
		browser.close()
	}
}

// TestBrowser drives the demo page in headless Chromium: an error is shown
// to the person, a click buys an item and the funds and inventories
// change, the strategy switch changes the server's strategy, a lab run
// draws a recipe's timeline beside its fix with their verdicts, and (on
// redis-server) a 5 s rush run by the service at 50 buyers (10 s for the
// screenshots), with a 2 ms round trip added, shows the strategies differ.
func TestBrowser(t *testing.T) {
	redistest.SkipShort(t, redistest.NeedBrowser) // real time or real load: the full run has it
	// Not in parallel: the rush must end within its bound (its duration
	// and 15 s), which, beside the other tests, a loaded machine missed.
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		if err := b.Client.FlushAll(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		m := demoMarket(t, b, market.WithLedger(market.NewLedger()))
		srv, ts := demoServer(t, withJobs(Config{Market: m, Env: output.NewEnv(b.Name, "")}, b))

		cctx, cancelTab := browserTab(t)
		defer cancelTab()
		tctx, cancel := redistest.UntilDeadline(cctx, t)
		defer cancel()

		// Fail on any uncaught exception of the page.
		defer watchExceptions(t, tctx)()

		text := func(sel string) string {
			t.Helper()
			s, err := chromedp.Run(tctx, chromedp.Text(chromedp.CSS(sel)))
			if err != nil {
				t.Fatalf("text of %s: %v", sel, err)
			}
			return strings.TrimSpace(s)
		}
		waitJS := func(what, expr string) {
			t.Helper()
			if _, err := chromedp.Run(tctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(0))); err != nil {
				t.Fatalf("waiting for %s: %v", what, err)
			}
		}
		do := func(what string, actions ...chromedp.Action[chromedp.Void]) {
			t.Helper()
			if err := chromedp.Do(tctx, actions...); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		}

		do("load the page", chromedp.Navigate(ts.URL), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="true"]`)))
		if got := text(`#user-alice .funds`); got != "500" {
			t.Fatalf("alice's funds show %q", got)
		}

		// An error is shown, not swallowed: the map is sold behind the
		// page's back, then the person tries to buy it.
		if _, err := m.Purchase(ctx, market.Fine, "carol", "dave", "map", 40); err != nil {
			t.Fatal(err)
		}
		do("try to buy the sold map",
			chromedp.SetValue(chromedp.CSS(`#buyer`), "alice"),
			chromedp.Click(chromedp.CSS(`button.buy[data-item="map"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#errors .error`)))
		if got := text(`#errors .error[data-code="` + CodeListingNotFound + `"]`); !strings.Contains(got, "listing not found") ||
			strings.Contains(got, CodeListingNotFound) || strings.Contains(got, "market:") {
			t.Fatalf("error shown: %q, want it in words", got)
		}
		do("dismiss the error", chromedp.Click(chromedp.CSS(`#errors .error button`)))
		waitJS("the error to go", `document.querySelectorAll("#errors .error").length === 0`)

		// Buy the bow from Bob as Alice, by clicking.
		do("buy the bow",
			chromedp.SetValue(chromedp.CSS(`#buyer`), "alice"),
			chromedp.Click(chromedp.CSS(`button.buy[data-item="bow"]`)))
		waitJS("the bow in Alice's inventory", `document.querySelector('#user-alice .chip[data-item="bow"]') !== null`)
		if got := text(`#user-alice .funds`); got != "420" {
			t.Errorf("alice's funds show %q after buying the bow, want 420", got)
		}
		if got := text(`#user-bob .funds`); got != "380" {
			t.Errorf("bob's funds show %q after selling the bow, want 380", got)
		}
		waitJS("the bow off the market", `document.querySelector('button.buy[data-item="bow"]') === null`)
		if got := text(`#last-op`); !strings.Contains(got, "alice bought bow from bob for 80") {
			t.Errorf("purchase note %q", got)
		}

		// Switch the strategy.
		do("switch to lua", chromedp.Click(chromedp.CSS(`#strategy button[data-strategy="lua"]`)))
		waitJS("lua selected", `document.querySelector('#strategy button[data-strategy="lua"]').getAttribute("aria-checked") === "true"`)
		if srv.Strategy() != market.Lua {
			t.Fatalf("server strategy %s after the switch, want lua", srv.Strategy())
		}

		// The lab: recipe 6 drawn step by step beside its fix.
		waitJS("the lab's scenarios", `document.querySelector("#lab-scenario").dataset.ready === "true"`)
		do("run recipe 6 in the lab",
			chromedp.SetValue(chromedp.CSS(`#lab-scenario`), "recipe:6"),
			chromedp.Click(chromedp.CSS(`#lab-run`)))
		waitJS("the lab run to be drawn", `["done", "failed"].includes(document.querySelector("#lab-status").dataset.state)`)
		if got := text(`#lab-status`); !strings.HasPrefix(got, "done") {
			t.Fatalf("lab %s; errors: %s", got, text(`#errors`))
		}
		flawed, fixed := `.lab-run[data-name="flawed"]`, `.lab-run[data-name="fixed"]`
		for _, want := range []struct{ sel, text string }{
			{flawed + " .lab-head:nth-child(2)", "A"},
			{flawed + " .lab-clock", "virtual clock"},
			{flawed + " .lab-step.kind-pause_start", "A pauses until"},
			{flawed + " .lab-step.kind-lease_expired", "ran out"},
			{flawed + " .lab-step.kind-lease_expired", "on the virtual clock"},
			{flawed + " .lab-step.marked", "commits after its lease"},
			{flawed + " .verdict", "the item is sold twice"},
			{flawed + " .verdict", "The unsafe step: A commits after its lease"},
			{flawed + " .lab-findings", "Item sword was sold twice: one finding"},
			{flawed + " h3 .pill", "1 finding"},
			{flawed + " .verdict", "one finding: item sword sold twice"},
			{fixed + " .lab-step.refused", "EXEC aborted"},
			{fixed + " .verdict", "Fixed by 6 + fencing"},
		} {
			if got := text(want.sel); !strings.Contains(got, want.text) {
				t.Errorf("%s shows %q, want %q", want.sel, got, want.text)
			}
		}
		if n, err := chromedp.Run(tctx, chromedp.Evaluate[int](`document.querySelectorAll('.lab-run[data-name="fixed"] .lab-step.marked').length`)); err != nil || n != 0 {
			t.Errorf("the fixed run shows %d marked steps (%v)", n, err)
		}
		shoot(tctx, t, b, "#lab-panel", "demo-lab.png")

		// A rush run by the service: 5 s at 50 buyers, 5 listers, every
		// strategy (10 s, the page's default, for the screenshots). On
		// miniredis, which runs one command at a time, only that it runs
		// and fills in; on redis-server, that the strategies differ as
		// they should.
		// On redis-server the rush adds the 2 ms round trip the page
		// suggests, under which WATCH collapses.
		seconds, rtt := "5", "2"
		if os.Getenv(screenshotEnv) != "" {
			seconds = "10"
		}
		if !b.Real() {
			seconds, rtt = "2", "0"
		}
		do("run a rush",
			chromedp.SetValue(chromedp.CSS(`#rush-buyers`), "50"),
			chromedp.SetValue(chromedp.CSS(`#rush-listers`), "5"),
			chromedp.SetValue(chromedp.CSS(`#rush-seconds`), seconds),
			chromedp.SetValue(chromedp.CSS(`#rush-rtt`), rtt),
			chromedp.Click(chromedp.CSS(`#rush-run`)))
		waitJS("the rush to start", `document.querySelector("#rush-status").dataset.state === "running"`)
		waitJS("the rush to end", `["done", "failed", "cancelled"].includes(document.querySelector("#rush-status").dataset.state)`)
		if got := text(`#rush-status`); !strings.HasPrefix(got, "done") {
			t.Fatalf("rush %s; errors: %s", got, text(`#errors`))
		}
		// The page explains itself: a reading of the rush from its own
		// figures, purchases lost to another buyer rather than failed,
		// labels large enough for a projector, the miniredis label.
		// The reading names the strategy that bought the most only when
		// the spread of the run's fifths allows: on redis-server it does
		// or says it cannot tell; on miniredis it draws no verdict.
		reading := text(`#rush-reading`)
		switch {
		case !b.Real() && (!strings.Contains(reading, "illustrative only: no verdict") || strings.Contains(reading, "bought the most")):
			t.Errorf("the rush's reading on miniredis: %q, want the illustrative line and no verdict", reading)
		case b.Real() && !strings.Contains(reading, "bought the most") && !strings.Contains(reading, "cannot tell"):
			t.Errorf("the rush's reading: %q, want a winner or that it cannot tell", reading)
		case b.Real() && !strings.Contains(reading, "WATCH retried"):
			t.Errorf("the rush's reading: %q, want WATCH's retries explained", reading)
		}
		for _, want := range []struct{ sel, text string }{
			{`#rush-results thead`, "another buyer"},
			{`#intro`, "Run a rush with a round trip of 2 ms"},
			{`#strategy-label`, "Demo market's strategy"},
		} {
			if got := text(want.sel); !strings.Contains(got, want.text) {
				t.Errorf("%s shows %q, want %q", want.sel, got, want.text)
			}
		}
		if n, err := chromedp.Run(tctx, chromedp.Evaluate[float64](`Math.min(...[...document.querySelectorAll("#rush-chart text")].map((e) => e.getBoundingClientRect().height))`)); err != nil || n < 18 {
			t.Errorf("the rush chart's smallest label is %.1f px high (%v), want at least 18", n, err)
		}
		if hidden, err := chromedp.Run(tctx, chromedp.Evaluate[bool](`document.querySelector("#illustrative").hidden`)); err != nil || hidden != b.Real() {
			t.Errorf("the illustrative label hidden: %v (%v), on miniredis: %v", hidden, err, !b.Real())
		}
		num := func(sel string) float64 {
			t.Helper()
			v, err := strconv.ParseFloat(strings.ReplaceAll(text(sel), ",", ""), 64)
			if err != nil {
				t.Fatalf("%s: %v", sel, err)
			}
			return v
		}
		rate := map[market.Strategy]float64{}
		retries := map[market.Strategy]float64{}
		for _, st := range market.Strategies {
			row := "#rush-" + string(st)
			if got := text(row + " .audit"); got != "ok" {
				t.Errorf("%s: audit %q", st, got)
			}
			if num(row+" .bought") <= 0 || num(row+" .samples") != num(row+" .bought") {
				t.Errorf("%s: bought %s from %s samples", st, text(row+" .bought"), text(row+" .samples"))
			}
			if got := text(row + " .waits"); !strings.Contains(got, " / ") {
				t.Errorf("%s: waits %q, want p50 / p99", st, got)
			}
			rate[st], retries[st] = num(row+" .rate"), num(row+" .retries")
		}
		if n, err := chromedp.Run(tctx, chromedp.Evaluate[int](`document.querySelectorAll("#rush-chart polyline").length`)); err != nil || n != 4 {
			t.Errorf("the chart has %d lines (%v), want 4", n, err)
		}
		if b.Real() {
			if retries[market.Watch] <= 0 || retries[market.Watch] == retries[market.Fine] || retries[market.Watch] == retries[market.Lua] {
				t.Errorf("retries per purchase: %v; want watch > 0 and different from fine and lua", retries)
			}
			for i, a := range market.Strategies {
				for _, c := range market.Strategies[i+1:] {
					if rate[a] == rate[c] {
						t.Errorf("%s and %s both bought %v per second", a, c, rate[a])
					}
				}
			}
			t.Logf("purchases/s %v, retries per purchase %v", rate, retries)
		}
		if n := len(strings.Fields(text(`#errors`))); n != 0 {
			t.Errorf("errors shown after the rush: %s", text(`#errors`))
		}
		shoot(tctx, t, b, "#rush-panel", "demo-rush.png")

		shot, err := chromedp.Run(tctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "demo.png")
		if p := os.Getenv(screenshotEnv); p != "" && b.Real() {
			path = p
		}
		if err := os.WriteFile(path, shot, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", path)

		audit(t, m)
		// The lab and the rush ran in markets of their own.
		if rep, err := m.Audit(ctx); err != nil || rep.Users != 5 {
			t.Errorf("audit saw %d users, want the 5 of the demo: %v", rep.Users, err)
		}
	})
}

// shoot writes a screenshot of the element sel: into the directory of
// LOCKMARKET_SCREENSHOT as name on redis-server when it is set, into the
// test's temporary directory otherwise.
func shoot(ctx context.Context, t *testing.T, b *redistest.Backend, sel, name string) {
	t.Helper()
	shot, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("screenshot of %s: %v", sel, err)
	}
	path := filepath.Join(t.TempDir(), name)
	if p := os.Getenv(screenshotEnv); p != "" && b.Real() {
		path = filepath.Join(filepath.Dir(p), name)
	}
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of %s: %s", sel, path)
}

// tab is a headless Chromium tab for a test, closed when the test ends,
// which also fails the test on any uncaught exception of the page.
type tab struct {
	t   *testing.T
	ctx context.Context
}

func newTab(t *testing.T, url string) *tab {
	t.Helper()
	cctx, cancelTab := browserTab(t)
	tctx, cancel := redistest.UntilDeadline(cctx, t)
	stopWatching := watchExceptions(t, tctx)
	t.Cleanup(func() {
		stopWatching()
		cancel()
		cancelTab()
	})
	p := &tab{t: t, ctx: tctx}
	p.do("load the page", chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="true"]`)))
	return p
}

// removeProfile removes a browser's profile directory, trying again for
// a while as long as something is still writing into it.
func removeProfile(dir string) error {
	var err error
	for range 50 {
		if err = os.RemoveAll(dir); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

func (p *tab) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	if err := chromedp.Do(p.ctx, actions...); err != nil {
		p.t.Fatalf("%s: %v", what, err)
	}
}

func (p *tab) text(sel string) string {
	p.t.Helper()
	s, err := chromedp.Run(p.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		p.t.Fatalf("text of %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

// wait waits until the page's expr is true: for as long as it takes, up
// to the test's deadline (redistest.Deadline), which the tab's context
// carries. What it waits for is the page's event (a step drawn, a
// search's verdict shown); where the code behind it has a bound of its
// own (a search's budget, a step's), that bound decides.
func (p *tab) wait(what, expr string) {
	p.t.Helper()
	if _, err := chromedp.Run(p.ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(0))); err != nil {
		p.t.Fatalf("waiting for %s: %v; errors shown: %s", what, err, p.text(`#errors`))
	}
}

func (p *tab) count(sel string) int {
	p.t.Helper()
	n, err := chromedp.Run(p.ctx, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, sel)))
	if err != nil {
		p.t.Fatalf("count %s: %v", sel, err)
	}
	return n
}

// explorerTab opens the demo page of a service of its own (on embedded
// miniredis: the explorer's sessions run there whatever the served Redis
// is) in a tab, waits for the explorer's recipes, and returns the tab and
// a function that starts a session of a recipe, or of its fix.
func explorerTab(t *testing.T) (p *tab, startSession func(recipe string, fixed bool)) {
	t.Helper()
	b := redistest.Mini(t)
	m := demoMarket(t, b, market.WithLedger(market.NewLedger()))
	_, ts := demoServer(t, withJobs(Config{Market: m, Env: output.NewEnv(b.Name, "")}, b))
	p = newTab(t, ts.URL)
	p.wait("the explorer's recipes", `document.querySelector("#explore-target").dataset.ready === "true"`)
	return p, func(recipe string, fixed bool) {
		t.Helper()
		steps0 := `document.querySelector("#explore-session").dataset.steps === "0"`
		p.do("start recipe "+recipe,
			chromedp.Evaluate[chromedp.Void](`void (document.querySelector("#explore-session").dataset.steps = "")`),
			chromedp.SetValue(chromedp.CSS(`#explore-target`), "recipe:"+recipe),
			chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`void (document.querySelector("#explore-fixed").checked = %v)`, fixed)),
			chromedp.Click(chromedp.CSS(`#explore-start`)))
		p.wait("the session of recipe "+recipe, steps0)
	}
}

// TestBrowserExplorer drives the lab's explorer in headless Chromium as a
// class would: recipe 1, A and B start, A's GET, B's GET, A's SET, B's SET, and the
// mutual exclusion violation lights up on B's SET; undo takes it away;
// the slider scrubs the history, and a find from step 3 plays what it
// finds. TestBrowserExplorerRecipe6 and TestBrowserExplorerLua, beside
// it, drive the rest of the explorer, each in a tab and a service of its
// own.
func TestBrowserExplorer(t *testing.T) {
	t.Parallel() // a tab and a service of its own
	p, startSession := explorerTab(t)
	click := func(client string, n int) {
		t.Helper()
		p.do(fmt.Sprintf("%s's next command", client),
			chromedp.Click(chromedp.CSS(fmt.Sprintf(`#explore-actions button[data-kind="run"][data-client=%q]`, client))))
		p.wait(fmt.Sprintf("step %d", n), fmt.Sprintf(`document.querySelector("#explore-session").dataset.steps === "%d"`, n))
	}

	startSession("1", false)
	for i, c := range []string{"A", "B"} {
		p.do(c+" starts", chromedp.Click(chromedp.CSS(fmt.Sprintf(`#explore-actions button[data-kind="start"][data-client=%q]`, c))))
		p.wait(fmt.Sprintf("step %d", i+1), fmt.Sprintf(`document.querySelector("#explore-session").dataset.steps === "%d"`, i+1))
	}
	for i, c := range []string{"A", "B", "A", "B"} {
		click(c, i+3)
	}
	lit := `#explore-lanes .lab-step.marked[data-property="mutual_exclusion"]`
	if n := p.count(lit); n != 1 {
		t.Fatalf("%d steps lit for mutual_exclusion, want 1", n)
	}
	if got := p.text(lit + " .cmd"); !strings.HasPrefix(got, "SET") {
		t.Errorf("the lit step's command reads %q, want a SET", got)
	}
	if got := p.text(lit + " .say"); !strings.Contains(got, "both believe they hold the lock") {
		t.Errorf("the lit step says %q", got)
	}
	// Each client's column: the token it holds, by a name that stays,
	// and that it believes it holds the lock; the step in words; the
	// causal chain, lit in order, naming the clients.
	for _, c := range []string{"A", "B"} {
		if n := p.count(fmt.Sprintf(`.client-view[data-client=%q][data-token="%s#1"][data-believes="true"]`, c, c)); n != 1 {
			t.Errorf("client %s's column does not show it holding %s#1: %q", c, c, p.text(fmt.Sprintf(`.client-view[data-client=%q]`, c)))
		}
	}
	if got := p.text(`#explore-lanes .lab-step[data-step="2"] .say`); got != "(nil): A finds the lock free." {
		t.Errorf("A's GET says %q", got)
	}
	if n := p.count(`#explore-lanes .lab-step.chain`); n < 3 {
		t.Errorf("%d steps in the causal chain, want the takes and the reads", n)
	}
	if got := p.text(`#explore-verdict .chain-why`); !strings.Contains(got, "B took the lock") || !strings.Contains(got, "A took the lock") {
		t.Errorf("the causal chain reads %q", got)
	}
	checkChainNumbers(t, p)
	if got := p.text(`#explore-lanes .lab-step[data-step="5"]`); p.count(`#explore-lanes .lab-step[data-step="5"][data-client="B"].marked`) != 1 {
		t.Errorf("step 6 (%q) is not B's, lit", got)
	}
	if got := p.text(`#explore-verdict`); !strings.Contains(got, "mutual exclusion broke") {
		t.Errorf("verdict %q", got)
	}
	if got := p.text(`#explore-holders`); !strings.Contains(got, "A holds") || !strings.Contains(got, "B holds") {
		t.Errorf("holders %q, want A and B", got)
	}
	if os.Getenv(screenshotEnv) != "" {
		shootTab(p, "#explore-panel", "demo-explore.png")
	}
	p.do("undo", chromedp.Click(chromedp.CSS(`#explore-undo`)))
	p.wait("the undo", `document.querySelector("#explore-session").dataset.steps === "5"`)
	if n := p.count(`#explore-lanes .lab-step.marked`); n != 0 {
		t.Errorf("%d steps still lit after undo", n)
	}
	// The slider scrubs the history, and the whole view follows it: at
	// step 3 of 5, the clock, the holders and the verdict are step 3's;
	// the next steps and a find act from step 3.
	p.do("scrub to step 3", chromedp.Evaluate[chromedp.Void](`void (() => {
		const s = document.querySelector("#explore-slider");
		s.value = "3";
		s.dispatchEvent(new Event("input"));
	})()`))
	if n := p.count(`#explore-lanes .lab-step.future`); n != 2 {
		t.Errorf("%d steps faded after scrubbing to 3 of 5, want 2", n)
	}
	frame3, err := chromedp.Run(p.ctx, chromedp.Evaluate[struct {
		Clock   int64    `json:"clock"`
		Holders []string `json:"holders"`
	}](`({clock: explore.state.frames[3].clock_ms, holders: explore.state.frames[3].holders.map((h) => h.client)})`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.text(`#explore-clock`), fmt.Sprintf("%d ms", frame3.Clock); got != want {
		t.Errorf("clock at step 3 shows %q, want %q", got, want)
	}
	if got := p.text(`#explore-holders`); len(frame3.Holders) == 0 && got != "no valid lease" {
		t.Errorf("holders at step 3 show %q, want none (step 3 holds %v)", got, frame3.Holders)
	}
	if got := p.text(`#explore-verdict`); !strings.Contains(got, "Step 3 of 5: nothing broken yet") {
		t.Errorf("verdict at step 3: %q", got)
	}
	if n := p.count(`.client-view[data-believes="true"]`); n != 0 {
		t.Errorf("at step 3, %d clients believe they hold the lock, want none", n)
	}
	if n := p.count(`#explore-lanes .lab-step.chain`); n != 0 {
		t.Errorf("at step 3, %d steps lit as a causal chain, want none", n)
	}
	if got, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](`document.querySelector("#explore-slider").getAttribute("aria-valuetext")`)); err != nil || got != "3 of 5 steps" {
		t.Errorf("the slider's text value: %q (%v), want \"3 of 5 steps\"", got, err)
	}
	if got := p.text(`#explore-find`); got != "Find a bug from step 3" {
		t.Errorf("the find button at step 3 reads %q", got)
	}
	p.do("find a bug from step 3", chromedp.Evaluate[chromedp.Void](`void (explore.stepMS = 0)`),
		chromedp.Click(chromedp.CSS(`#explore-find`)))
	p.wait("the counterexample from step 3 played", `["mutual_exclusion", "resource", "liveness", "none", "failed"].includes(document.querySelector("#explore-verdict").dataset.found)`)
	if got := p.text(`#explore-verdict`); !strings.Contains(got, "from step 3") {
		t.Errorf("the find from step 3: verdict %q", got)
	}
	if p.count(`#explore-lanes .lab-step.marked`) == 0 || p.count(`#explore-lanes .lab-step.future`) != 0 {
		t.Errorf("after the find from step 3: %d lit, %d faded", p.count(`#explore-lanes .lab-step.marked`), p.count(`#explore-lanes .lab-step.future`))
	}
}

// TestBrowserExplorerRecipe6 drives the explorer on recipe 6: "find a bug
// from here" plays a counterexample to a resource violation step by
// step; on its fix (fencing) it finds none, and the fix stepped by hand
// refuses the late write.
func TestBrowserExplorerRecipe6(t *testing.T) {
	t.Parallel() // a tab and a service of its own
	p, startSession := explorerTab(t)

	// Recipe 6: once A holds the lock, has read the counter and paused
	// past its lease, the explorer finds that the lock keeps what it
	// promises in every continuation, and plays the lost update it does
	// not promise. (From step 0 the same question takes some 800
	// schedules: results/explore/pasted.txt.)
	startSession("6", false)
	for i, sel := range []string{`[data-kind="start"][data-client="A"]`, `[data-kind="run"][data-client="A"]`,
		`[data-kind="run"][data-client="A"]`, `[data-kind="pause"][data-client="A"][data-length="long"]`} {
		p.do(fmt.Sprintf("step %d: %s", i+1, sel), chromedp.Click(chromedp.CSS(`#explore-actions button`+sel)))
		p.wait(fmt.Sprintf("step %d", i+1), fmt.Sprintf(`document.querySelector("#explore-session").dataset.steps === "%d"`, i+1))
	}
	// The playback's pause between steps is for the eye; the steps
	// themselves are sent and drawn one by one all the same.
	p.do("find a bug", chromedp.Evaluate[chromedp.Void](`void (explore.stepMS = 0)`),
		chromedp.Click(chromedp.CSS(`#explore-find`)))
	p.wait("the counterexample played", `["not_promised", "resource", "none", "failed"].includes(document.querySelector("#explore-verdict").dataset.found)`)
	if n := p.count(`#explore-lanes .lab-step.marked[data-property="resource"]`); n != 1 {
		t.Errorf("%d steps lit for resource after the counterexample (verdict %q)", n, p.text(`#explore-verdict`))
	}
	if got := p.text(`#explore-verdict`); p.count(`#explore-verdict.unpromised`) != 1 || !strings.Contains(got, "resource broke") ||
		!strings.Contains(got, "does not promise") || !strings.Contains(got, "fencing token") {
		t.Errorf("verdict %q, want the lost update shown as not promised", got)
	}
	recipe6 := judgement(p)
	for prop, want := range map[string]string{"mutual_exclusion": "holds", "liveness": "holds", "resource": "not_promised",
		"ownership": "not_checked", "lease": "not_checked"} {
		if recipe6[prop] != want {
			t.Errorf("recipe 6's %s: %q, want %q (%v)", prop, recipe6[prop], want, recipe6)
		}
	}
	// Its causal chain names the client whose lease ran out and the
	// write that lost an update.
	if got := p.text(`#explore-verdict .chain-why`); !strings.Contains(got, "'s lease ran out") || !strings.Contains(got, "over it") {
		t.Errorf("recipe 6's causal chain reads %q", got)
	}
	checkChainNumbers(t, p)
	// The focus, on the find button when it was pressed, is back there
	// once the counterexample has played: on the undo button beside it,
	// as the schedule played is complete and nothing is left to find.
	if got, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](`document.activeElement.id +
		(document.querySelector("#explore-find").disabled ? " (find disabled)" : "")`)); err != nil ||
		got != "explore-undo (find disabled)" && got != "explore-find" {
		t.Errorf("after the search the focus is on %q (%v), want the find button, or undo beside it", got, err)
	}
	// Each part of the verdict is a sentence of its own.
	if got := p.text(`#explore-verdict`); regexp.MustCompile(`[^.!?] Found by`).MatchString(got) {
		t.Errorf("the verdict runs on: %q", got)
	}
	if os.Getenv(screenshotEnv) != "" {
		shootTab(p, "#explore-panel", "demo-explore-find.png")
	}

	// Its fix, from step 0: a long search, with its progress shown, that
	// ends in a result or is cancelled; never a timeout.
	startSession("6", true)
	p.do("find a bug in the fix", chromedp.Click(chromedp.CSS(`#explore-find`)))
	p.wait("the search's progress or answer", `!document.querySelector("#explore-progress").hidden || document.querySelector("#explore-verdict").dataset.found !== ""`)
	if p.count(`#explore-cancel:not([hidden])`) == 1 {
		if got := p.text(`#explore-progress`); !strings.Contains(got, "from step 0") {
			t.Errorf("progress reads %q", got)
		}
		p.do("cancel the search", chromedp.Click(chromedp.CSS(`#explore-cancel`)))
	}
	p.wait("the search's end", `["resource", "mutual_exclusion", "liveness", "none", "cancelled"].includes(document.querySelector("#explore-verdict").dataset.found)`)
	if got := p.text(`#explore-verdict`); !strings.HasPrefix(got, "No bug") && !strings.HasPrefix(got, "Search cancelled") || p.count(`#explore-lanes .lab-step.marked`) != 0 {
		t.Errorf("the fenced recipe 6: %q", got)
	}
	t.Logf("fenced recipe 6: %s", p.text(`#explore-verdict`))

	// The fix stepped by hand: B takes the lock and pauses past its
	// lease, A takes it and writes, B wakes and its fenced write is
	// refused: amber, and the verdict says the fence stopped it.
	startSession("6", true)
	for i, sel := range []string{`[data-kind="start"][data-client="B"]`, `[data-kind="run"][data-client="B"]`,
		`[data-kind="pause"][data-client="B"][data-length="long"]`, `[data-kind="tick"]`, `[data-kind="start"][data-client="A"]`,
		`[data-kind="run"][data-client="A"]`, `[data-kind="run"][data-client="A"]`, `[data-kind="run"][data-client="A"]`,
		`[data-kind="run"][data-client="A"]`, `[data-kind="run"][data-client="B"]`, `[data-kind="run"][data-client="B"]`} {
		p.do(fmt.Sprintf("step %d: %s", i+1, sel), chromedp.Click(chromedp.CSS(`#explore-actions button`+sel)))
		p.wait(fmt.Sprintf("step %d", i+1), fmt.Sprintf(`document.querySelector("#explore-session").dataset.steps === "%d"`, i+1))
	}
	if n := p.count(`#explore-lanes .lab-step.refused[data-client="B"]`); n != 1 {
		t.Errorf("%d of B's steps amber, want its refused write", n)
	}
	if got := p.text(`#explore-verdict.fenced`); !strings.Contains(got, "The fence stopped it") {
		t.Errorf("the verdict of the fenced write: %q", got)
	}
	if os.Getenv(screenshotEnv) != "" {
		shootTab(p, "#explore-panel", "demo-explore-fenced.png")
	}
}

// TestBrowserExplorerLua drives the explorer on pasted Lua, which runs on
// a redis-server started for its session: a lock whose extension renews
// anyone's, a loop that never ends, a release by a plain DEL, and a
// correct lock.
func TestBrowserExplorerLua(t *testing.T) {
	t.Parallel() // a tab and a service of its own
	redistest.RequireServer(t)
	p, _ := explorerTab(t)

	// Your own lock: an example loaded with one click, as a student
	// would paste it: the extension renews whatever lock it finds. The
	// search finds two holders at once, and plays it with its chain.
	startLua := func(example string, bounds ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		p.do("your own lock: "+example, append(append([]chromedp.Action[chromedp.Void]{
			chromedp.Evaluate[chromedp.Void](`void (document.querySelector("#explore-session").dataset.steps = "")`),
			chromedp.SetValue(chromedp.CSS(`#explore-target`), "lua:"),
			chromedp.Evaluate[chromedp.Void](`void document.querySelector("#explore-target").dispatchEvent(new Event("change"))`),
			chromedp.Click(chromedp.CSS(fmt.Sprintf(`#explore-lua button[data-example=%q]`, example)))}, bounds...),
			chromedp.Click(chromedp.CSS(`#explore-start`)))...)
		p.wait("the session of "+example, `document.querySelector("#explore-session").dataset.steps === "0"`)
	}
	startLua("extend renews anyone's lock")
	if got, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](`document.querySelector("#explore-lua-extend").value`)); err != nil ||
		!strings.Contains(got, "PEXPIRE") {
		t.Fatalf("the example's extend: %q (%v)", got, err)
	}
	p.do("find a bug in the pasted lock", chromedp.Click(chromedp.CSS(`#explore-find`)))
	p.wait("the pasted lock's counterexample", `["mutual_exclusion", "ownership", "liveness", "lease", "none", "not_promised", "failed", "cancelled"].includes(document.querySelector("#explore-verdict").dataset.found)`)
	// Its extension answers success to a client whose hold had ended
	// (ownership), and may so leave two holders (mutual exclusion).
	switch got := p.text(`#explore-verdict`); {
	case strings.Contains(got, "mutual exclusion broke") && p.count(`#explore-verdict .chain-why li`) >= 2:
	case strings.Contains(got, "ownership broke"):
	default:
		t.Errorf("the pasted lock: verdict %q", got)
	}
	if os.Getenv(screenshotEnv) != "" {
		shootTab(p, "#explore-panel", "demo-explore-lua.png")
	}
	// A loop that never ends is stopped by its bound, with a message in
	// the panel; the page and the service go on.
	startLua("a loop that never ends")
	p.do("A starts", chromedp.Click(chromedp.CSS(`#explore-actions button[data-kind="start"][data-client="A"]`)))
	p.wait("step 1", `document.querySelector("#explore-session").dataset.steps === "1"`)
	p.do("A's acquire", chromedp.Click(chromedp.CSS(`#explore-actions button[data-kind="run"][data-client="A"]`)))
	p.wait("the loop's message", `!document.querySelector("#explore-error").hidden`)
	if got := p.text(`#explore-error`); !strings.Contains(got, "the step ran past its budget of 2s") {
		t.Errorf("the loop's message: %q", got)
	}

	// The textbook bug, a release by a plain DEL, searched with three
	// clients (the default): found broken.
	startLua("release by a plain DEL")
	p.do("find a bug in the DEL release", chromedp.Click(chromedp.CSS(`#explore-find`)))
	p.wait("the DEL release's counterexample", `["mutual_exclusion", "ownership", "liveness", "lease", "none", "not_promised", "failed", "cancelled"].includes(document.querySelector("#explore-verdict").dataset.found)`)
	if got := p.text(`#explore-verdict`); !strings.Contains(got, "mutual exclusion broke") && !strings.Contains(got, "ownership broke") {
		t.Errorf("the DEL release: verdict %q", got)
	}
	if del := judgement(p); del["mutual_exclusion"] != "broken" && del["ownership"] != "broken" {
		t.Errorf("the DEL release's properties: %v", del)
	}

	// A correct lock (recipe 6's algorithm, renewed by its owner only),
	// with two clients and a pause past the lease, to keep this quick:
	// it keeps all it promises, and the lost update is shown as what it
	// does not promise.
	startLua("correct", chromedp.SetValue(chromedp.CSS(`#explore-lua-clients`), "2"),
		chromedp.Evaluate[chromedp.Void](`void document.querySelectorAll("#explore-lua .lua-fault input").forEach(
			(c) => { c.checked = c.id === "explore-lua-fault-pause-long"; })`))
	if got := p.text(`#explore-status`); !strings.Contains(got, "lua") {
		t.Errorf("the correct lock's session: %q", got)
	}
	p.do("find a bug in the correct lock", chromedp.Click(chromedp.CSS(`#explore-find`)))
	p.wait("the correct lock's verdict", `["mutual_exclusion", "ownership", "liveness", "lease", "none", "not_promised", "failed", "cancelled"].includes(document.querySelector("#explore-verdict").dataset.found)`)
	correct := judgement(p)
	for prop, want := range map[string]string{"mutual_exclusion": "holds", "ownership": "holds", "liveness": "holds",
		"lease": "holds", "resource": "not_promised"} {
		if correct[prop] != want {
			t.Errorf("the correct lock's %s: %q, want %q (%v)", prop, correct[prop], want, correct)
		}
	}
	if got := p.text(`#explore-verdict`); p.count(`#explore-verdict.unpromised`) != 1 || !strings.Contains(got, "does not promise") {
		t.Errorf("the correct lock's verdict %q, want the lost update shown as not promised", got)
	}
	if got, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](`document.querySelector("#explore-judgement").textContent`)); err != nil ||
		!strings.Contains(got, "2 clients") || !strings.Contains(got, "pause-long") {
		t.Errorf("the properties checked do not say the bounds: %q (%v)", got, err)
	}
}

// judgement is each property's verdict as the page lists it after a
// search.
func judgement(p *tab) map[string]string {
	p.t.Helper()
	got, err := chromedp.Run(p.ctx, chromedp.Evaluate[map[string]string](`Object.fromEntries([...document.querySelectorAll(
		"#explore-judgement li")].map((li) => [li.dataset.property, li.dataset.verdict]))`))
	if err != nil {
		p.t.Fatal(err)
	}
	return got
}

// checkChainNumbers checks that the causal chain shown names its steps
// by the numbers of the lanes' badges, in the same order.
func checkChainNumbers(t *testing.T, p *tab) {
	t.Helper()
	got, err := chromedp.Run(p.ctx, chromedp.Evaluate[struct {
		Badges []string `json:"badges"`
		Steps  []string `json:"steps"`
		Chain  []string `json:"chain"`
	}](`({badges: [...document.querySelectorAll("#explore-lanes .lab-step.chain .chain-no")].map((b) => b.textContent),
		steps: [...document.querySelectorAll("#explore-lanes .lab-step.chain")].map((s) => String(Number(s.dataset.step) + 1)),
		chain: [...document.querySelectorAll("#explore-verdict .chain-why li")].map((l) => (l.textContent.match(/^step (\d+):/) || [])[1] || l.textContent)})`))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Chain) == 0 || !slices.Equal(got.Badges, got.Steps) || !slices.Equal(got.Badges, got.Chain) {
		t.Errorf("the lanes' badges %q (their steps %q), the chain's steps %q: want the same numbers", got.Badges, got.Steps, got.Chain)
	}
}

// shootTab writes a screenshot of sel beside LOCKMARKET_SCREENSHOT.
func shootTab(p *tab, sel, name string) {
	p.t.Helper()
	// The causal chain lights its steps one after the other: the picture
	// shows them all lit.
	p.do("finish the animations", chromedp.Evaluate[chromedp.Void](`void document.getAnimations().forEach((a) => a.finish())`))
	shot, err := chromedp.Run(p.ctx, chromedp.Screenshot(chromedp.CSS(sel)))
	if err != nil {
		p.t.Fatalf("screenshot of %s: %v", sel, err)
	}
	path := filepath.Join(filepath.Dir(os.Getenv(screenshotEnv)), name)
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		p.t.Fatal(err)
	}
	p.t.Logf("screenshot of %s: %s", sel, path)
}

// watchExceptions collects the uncaught exceptions of the page of ctx's
// tab; the returned stop ends the listening, waits for it, and fails t if
// the page threw any.
func watchExceptions(t *testing.T, ctx context.Context) (stop func()) {
	lctx, cancel := context.WithCancel(ctx)
	var exceptions []string
	listened := make(chan struct{})
	messages := chromedp.Console(lctx)
	go func() {
		defer close(listened)
		for msg, err := range messages {
			if err != nil {
				return
			}
			if msg.IsException() {
				exceptions = append(exceptions, msg.Text)
			}
		}
	}()
	return func() {
		cancel()
		<-listened
		if len(exceptions) > 0 {
			t.Errorf("exceptions in the page: %v", exceptions)
		}
	}
}
