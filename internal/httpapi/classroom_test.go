package httpapi

import (
	"context"
	"fmt"
	"net/http/httptest"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/lockmarket/lockmarket/internal/demo"
	"github.com/lockmarket/lockmarket/internal/labsession"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market"
)

// classSize is how many students TestBrowserClass seats.
const classSize = 40

// seat is what TestBrowserClass reads from a student's page.
type seat struct {
	Lit     int    `json:"lit"`
	Error   string `json:"error"`
	Asked   bool   `json:"asked"`
	Token   string `json:"token"`
	Session string `json:"session"`
}

// TestBrowserClass seats a class of 40 in one Chromium: 40 browser
// contexts (as separate as 40 incognito windows) each load the page of a
// service that has an admin token, start a session of recipe 1 without the
// token, and step it (A and B start, A GET, B GET, A SET, B SET) to the
// mutual exclusion violation, all at once. None is refused, none is asked
// for the token, and closing each context ends its session on the server.
// All 40 come from one address (loopback), so the service allows them 40
// sessions per client; a room has one address per student.
func TestBrowserClass(t *testing.T) {
	redistest.SkipShort(t, redistest.NeedBrowser) // 40 pages: the full run has it
	bin := chromium()
	if bin == "" {
		redistest.Skip(t, redistest.NeedBrowser, "chromium not on PATH")
	}
	b := redistest.Mini(t)
	ctx := context.Background()
	m, err := market.New(b.Client, "market")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := demo.Seed(ctx, m, market.Fine); err != nil {
		t.Fatal(err)
	}
	sessions := labsession.New(labsession.Config{PerClient: classSize})
	cfg := withJobs(Config{Market: m, AdminToken: "the-teachers-own"}, b)
	cfg.Explore.Close()
	cfg.Explore = sessions
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	open := func() int {
		t.Helper()
		body := string(serve(srv.Handler(), "GET", "/metrics", "").body)
		mm := regexp.MustCompile(`(?m)^lockmarket_explore_sessions (\d+)$`).FindStringSubmatch(body)
		if mm == nil {
			t.Fatal("/metrics has no lockmarket_explore_sessions")
		}
		n, _ := strconv.Atoi(mm[1])
		return n
	}

	actx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("no-pings", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1024, 768))
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	if err := chromedp.Do(bctx); err != nil { // start the browser
		t.Fatal(err)
	}

	// steps is recipe 1 as a student steps it: the kind and client of
	// each button clicked.
	steps := []struct{ kind, client string }{
		{"start", "A"}, {"start", "B"}, {"run", "A"}, {"run", "B"}, {"run", "A"}, {"run", "B"},
	}
	type student struct {
		ctx    context.Context
		cancel context.CancelFunc
		err    error
	}
	class := make([]*student, classSize)
	for i := range class {
		sctx, cancel := chromedp.NewContext(bctx, chromedp.WithNewBrowserContext())
		tctx, cancelT := context.WithTimeout(sctx, 3*time.Minute)
		class[i] = &student{ctx: tctx, cancel: func() { cancelT(); cancel() }}
	}
	defer func() {
		for _, s := range class {
			s.cancel()
		}
	}()
	began := time.Now()
	// The students come in a few at a time, as a class does (a page
	// loading is the browser's heaviest work), then step together.
	door := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i, s := range class {
		wg.Go(func() {
			do := func(what string, acts ...chromedp.Action[chromedp.Void]) bool {
				if err := chromedp.Do(s.ctx, acts...); err != nil {
					s.err = fmt.Errorf("student %d: %s: %w", i, what, err)
					return false
				}
				return true
			}
			wait := func(what, expr string) bool {
				if _, err := chromedp.Run(s.ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(2*time.Minute))); err != nil {
					s.err = fmt.Errorf("student %d: waiting for %s: %w", i, what, err)
					return false
				}
				return true
			}
			load := func() bool {
				door <- struct{}{}
				defer func() { <-door }()
				// A prompt would be the admin token asked for.
				return do("load the page", chromedp.Navigate(ts.URL), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="true"]`)),
					chromedp.Evaluate[chromedp.Void](`void (window.prompt = () => { window.askedForToken = true; return null; })`)) &&
					wait("the recipes", `document.querySelector("#explore-target").dataset.ready === "true"`)
			}
			if !load() ||
				!do("start recipe 1", chromedp.SetValue(chromedp.CSS(`#explore-target`), "recipe:1"),
					chromedp.Click(chromedp.CSS(`#explore-start`))) ||
				!wait("the session", `document.querySelector("#explore-session").dataset.steps === "0" || !document.querySelector("#explore-error").hidden`) {
				return
			}
			for n, st := range steps {
				if !do(fmt.Sprintf("step %d", n+1),
					chromedp.Click(chromedp.CSS(fmt.Sprintf(`#explore-actions button[data-kind=%q][data-client=%q]`, st.kind, st.client)))) ||
					!wait(fmt.Sprintf("step %d", n+1), fmt.Sprintf(`document.querySelector("#explore-session").dataset.steps === "%d" || !document.querySelector("#explore-error").hidden`, n+1)) {
					return
				}
			}
			got, err := chromedp.Run(s.ctx, chromedp.Evaluate[seat](`({
				lit: document.querySelectorAll('#explore-lanes .lab-step.marked[data-property="mutual_exclusion"][data-client="B"]').length,
				error: document.querySelector("#explore-error").hidden ? "" : document.querySelector("#explore-error").textContent,
				asked: window.askedForToken === true,
				token: sessionStorage.getItem("lockmarket.admin_token") || "",
				session: explore.id,
			})`))
			switch {
			case err != nil:
				s.err = fmt.Errorf("student %d: %w", i, err)
			case got.Error != "":
				s.err = fmt.Errorf("student %d was refused: %s", i, got.Error)
			case got.Lit != 1:
				s.err = fmt.Errorf("student %d: %d steps of B lit for mutual exclusion, want 1", i, got.Lit)
			case got.Asked || got.Token != "":
				s.err = fmt.Errorf("student %d was asked for the admin token (holds %q)", i, got.Token)
			case got.Session == "":
				s.err = fmt.Errorf("student %d holds no session", i)
			}
		})
	}
	wg.Wait()
	for _, s := range class {
		if s.err != nil {
			t.Error(s.err)
		}
	}
	if t.Failed() {
		return
	}
	t.Logf("%d students seated and stepped to the violation in %v", classSize, time.Since(began).Round(time.Millisecond))
	if n := open(); n != classSize {
		t.Fatalf("%d sessions open with the class seated, want %d", n, classSize)
	}

	// Each student closes the tab: its page ends its session.
	for i, s := range class {
		if err := chromedp.Do(s.ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, page.Close, cdp.Empty{})
			return err
		})); err != nil {
			t.Fatalf("closing student %d's tab: %v", i, err)
		}
		s.cancel()
	}
	t.Logf("every tab closed after %v", time.Since(began).Round(time.Millisecond))
	deadline := time.Now().Add(time.Minute)
	for open() != 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("sessions gone after %v", time.Since(began).Round(time.Millisecond))
	if n := open(); n != 0 {
		t.Errorf("%d sessions still open after every tab closed", n)
	}
}
