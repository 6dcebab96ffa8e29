package httpapi

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lockmarket/lockmarket/internal/demo"
	"github.com/lockmarket/lockmarket/internal/schema"
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

// TestBrowser drives the demo page in headless Chromium: an error is shown
// to the person, a click buys an item and the funds and inventories
// change, the strategy switch changes the server's strategy, and a rush
// under every strategy fills in its counters.
func TestBrowser(t *testing.T) {
	bin := chromium()
	if bin == "" {
		redistest.Skip(t, redistest.NeedBrowser, "chromium not on PATH")
	}
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		if err := b.Client.FlushAll(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		m, err := market.New(b.Client, "market", market.WithLedger(market.NewLedger()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := demo.Seed(ctx, m, market.Fine); err != nil {
			t.Fatal(err)
		}
		srv, err := New(Config{Market: m, Env: schema.NewEnv(b.Name, "")})
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(srv.Handler())
		defer ts.Close()

		actx, cancelAlloc := chromedp.NewExecAllocator(ctx,
			chromedp.ExecPath(bin),
			chromedp.Headless,
			chromedp.NoSandbox,
			chromedp.DisableGPU,
			chromedp.NoFirstRun,
			chromedp.NoDefaultBrowserCheck,
			chromedp.Flag("disable-quic", true),
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.Flag("disable-default-apps", true),
			chromedp.Flag("disable-extensions", true),
			chromedp.Flag("disable-dev-shm-usage", true),
			chromedp.Flag("no-pings", true),
			chromedp.UserDataDir(t.TempDir()),
			chromedp.WindowSize(1280, 1000),
		)
		defer cancelAlloc()
		cctx, cancelTab := chromedp.NewContext(actx)
		defer cancelTab()
		tctx, cancel := context.WithTimeout(cctx, 60*time.Second)
		defer cancel()

		// Collect uncaught exceptions of the page.
		var mu sync.Mutex
		var exceptions []string
		lctx, stopListening := context.WithCancel(tctx)
		listened := make(chan struct{})
		messages := chromedp.Console(lctx)
		go func() {
			defer close(listened)
			for msg, err := range messages {
				if err != nil {
					return
				}
				if msg.IsException() {
					mu.Lock()
					exceptions = append(exceptions, msg.Text)
					mu.Unlock()
				}
			}
		}()
		defer func() { stopListening(); <-listened }()

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
			if _, err := chromedp.Run(tctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
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
		if got := text(`#errors .error`); !strings.Contains(got, CodeListingNotFound) {
			t.Fatalf("error shown: %q", got)
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

		// A rush under every strategy: 24 purchases of 3 listings each.
		do("run a rush",
			chromedp.SetValue(chromedp.CSS(`#rush-n`), "24"),
			chromedp.SetValue(chromedp.CSS(`#rush-buyers`), "4"),
			chromedp.SetValue(chromedp.CSS(`#rush-listings`), "3"),
			chromedp.Click(chromedp.CSS(`#rush-run`)))
		waitJS("the rush to end", `["done", "failed"].includes(document.querySelector("#rush-status").textContent)`)
		if got := text(`#rush-status`); got != "done" {
			t.Fatalf("rush %s; errors: %s", got, text(`#errors`))
		}
		for _, st := range market.Strategies {
			row := "#rush-" + string(st)
			if got := text(row + " .done"); got != "24" {
				t.Errorf("%s: %s answers, want 24", st, got)
			}
			if got := text(row + " .ok"); got != "3" {
				t.Errorf("%s: %s bought, want 3", st, got)
			}
			if got := text(row + " .fails"); got != CodeListingNotFound+" ×21" {
				t.Errorf("%s: failures %q, want %s ×21", st, got, CodeListingNotFound)
			}
			for _, cell := range []string{".wait-ok", ".round-trip"} {
				if got := text(row + " " + cell); !strings.Contains(got, " / ") {
					t.Errorf("%s: %s shows %q, want mean / p99", st, cell, got)
				}
			}
		}
		do("show rush users", chromedp.Click(chromedp.CSS(`#show-rush`)))
		waitJS("rush buyers shown", `document.querySelector('#user-rush-b1') !== null`)
		if n := len(strings.Fields(text(`#errors`))); n != 0 {
			t.Errorf("errors shown after the rush: %s", text(`#errors`))
		}

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

		mu.Lock()
		if len(exceptions) > 0 {
			t.Errorf("exceptions in the page: %v", exceptions)
		}
		mu.Unlock()
		audit(t, m)
		if rep, err := m.Audit(ctx); err != nil || rep.Users != 5+4+1 {
			t.Errorf("audit saw %d users, want 10: %v", rep.Users, err)
		}
	})
}
