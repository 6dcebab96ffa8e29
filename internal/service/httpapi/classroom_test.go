package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/lockmarket/lockmarket/internal/service/exploresession"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// classEnv sets how many students TestBrowserClass seats: 40 for the
// room the page is built for (LOCKMARKET_CLASS=40); without it,
// classDefault, which the full run affords beside the other tests on a
// shared 2-core machine. classAtOnce is how many of them load their page
// or step their session at the same moment (the browser and the service
// share the machine's CPUs).
const (
	classEnv     = "LOCKMARKET_CLASS"
	classDefault = 8
	classAtOnce  = 4
	// classIdle ends a session unread for this long; the seated pages
	// read theirs every classKeepAlive.
	classIdle      = 30 * time.Second
	classKeepAlive = 3000 // ms
)

// seat is what TestBrowserClass reads from a student's page once its
// session is stepped to the violation.
type seat struct {
	Steps   string `json:"steps"`
	Lit     int    `json:"lit"`
	LitBy   string `json:"lit_by"`
	Error   string `json:"error"`
	Asked   bool   `json:"asked"`
	Token   string `json:"token"`
	Session string `json:"session"`
}

// studentSteps is run in a student's page once it is loaded: it starts a
// session of recipe 1 and steps it as a student does, by clicking the
// page's buttons (A and B start, A GET, B GET, A SET, B SET), each click
// waiting for the page to draw its step; then it reads what the page
// shows. The waits are on the page's own changes (a MutationObserver),
// not on a clock, and a refusal shown in the panel ends them. The page's
// refresh of the market, which forty tabs on one machine would multiply
// (each student has a machine of their own), is slowed to every %d ms
// (the page's own 3 s in a room's run, classEnv); its reading of the
// session is made more frequent (every %d ms), for classIdle.
const studentSteps = `(async () => {
	const q = (sel) => document.querySelector(sel);
	setRefreshInterval(%d);
	setInterval(keepAlive, %d);
	const refused = () => !q("#explore-error").hidden;
	const until = (cond) => new Promise((resolve) => {
		if (cond()) return resolve();
		const mo = new MutationObserver(() => { if (cond()) { mo.disconnect(); resolve(); } });
		mo.observe(document.body, { subtree: true, childList: true, attributes: true });
	});
	const steps = () => q("#explore-session").dataset.steps;
	await until(() => q("#explore-target").dataset.ready === "true" || refused());
	if (!refused()) {
		q("#explore-target").value = "recipe:1";
		q("#explore-start").click();
		await until(() => steps() === "0" || refused());
	}
	const clicks = [["start", "A"], ["start", "B"], ["run", "A"], ["run", "B"], ["run", "A"], ["run", "B"]];
	for (const [i, [kind, client]] of clicks.entries()) {
		if (refused()) break;
		const b = q('#explore-actions button[data-kind="' + kind + '"][data-client="' + client + '"]');
		if (!b) break;
		b.click();
		await until(() => steps() === String(i + 1) || refused());
	}
	const lit = [...document.querySelectorAll('#explore-lanes .lab-step.marked[data-property="mutual_exclusion"]')];
	return {
		steps: steps() || "",
		lit: lit.length,
		lit_by: lit.map((e) => e.dataset.client).join(","),
		error: refused() ? q("#explore-error").textContent : "",
		asked: window.askedForToken === true,
		token: sessionStorage.getItem("lockmarket.admin_token") || "",
		session: explore.id,
	};
})()`

// TestBrowserClass seats a class in one headless Chromium (classEnv: 40
// with LOCKMARKET_CLASS=40): as many browser contexts (as separate as
// incognito windows, each with its own storage) each load the page of a service that has an admin token,
// start a session of recipe 1 without the token, and step it to the
// mutual exclusion violation on B's SET. None is refused, none is asked
// for the token or sends one, all the sessions are open at once, and
// closing each tab ends its session on the server. The students load and
// step a few at a time (classAtOnce), in phone-sized windows (the least
// to draw), and every wait is on the page or the server reaching a state,
// never on a duration, so the outcome does not depend on the machine's
// speed or load: a slower machine only takes longer. All come from one
// address (loopback), so the service allows as many sessions per client;
// a room has one address per student.
func TestBrowserClass(t *testing.T) {
	redistest.SkipShort(t, redistest.NeedBrowser) // a browser per class: the full run has it
	t.Parallel()                                  // a browser and a service of its own
	classSize, refreshMS := classDefault, 600_000
	if v := os.Getenv(classEnv); v != "" {
		refreshMS = 3000 // the page's own
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			t.Fatalf("%s=%q: want a class of 1 to 100", classEnv, v)
		}
		classSize = n
	}
	bin := chromium()
	if bin == "" {
		redistest.Skip(t, redistest.NeedBrowser, "chromium not on PATH")
	}
	b := redistest.Mini(t)
	ctx := context.Background()
	m := demoMarket(t, b)
	cfg := withJobs(Config{Market: m, AdminToken: "the-teachers-own"}, b)
	cfg.Explore.Close()
	// The idle timer is shorter than the service's (45 s), and the pages
	// read their session more often than they do (every 15 s), so that a
	// session whose page is closed ends sooner within the test.
	cfg.Explore = exploresession.New(exploresession.Config{PerClient: classSize, IdleTimeout: classIdle})
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	// Every request the class sends passes here: none may carry a token,
	// none may be refused for want of one, and none may meet a rate
	// (the pages' reads of the users, all at once as they load, among
	// them).
	var tokens, unauthorized, limited, userReads atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			tokens.Add(1)
		}
		rec := &statusRecorder{ResponseWriter: w}
		srv.Handler().ServeHTTP(rec, r)
		if rec.status == http.StatusUnauthorized {
			unauthorized.Add(1)
		}
		if rec.status == http.StatusTooManyRequests {
			limited.Add(1)
		}
		if r.URL.Path == "/api/users" {
			userReads.Add(1)
		}
	}))
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

	// One browser for the class; its timers are not slowed in the
	// background tabs, which all of them but one are, lest a wait on a
	// page last for minutes.
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("no-pings", true),
		chromedp.Flag("disable-background-timer-throttling", true),
		chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.Flag("disable-backgrounding-occluded-windows", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(412, 700))
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	// The bound of the whole test is the test binary's (-timeout), less a
	// moment to report: a busy machine only makes it slower, and only a
	// hang stops it.
	bctx, cancelBound := redistest.UntilDeadline(bctx, t)
	defer cancelBound()
	if err := chromedp.Do(bctx); err != nil { // start the browser
		t.Fatal(err)
	}

	type student struct {
		ctx    context.Context
		cancel context.CancelFunc
		seat   seat
		err    error
	}
	class := make([]*student, classSize)
	for i := range class {
		sctx, cancel := chromedp.NewContext(bctx, chromedp.WithNewBrowserContext())
		class[i] = &student{ctx: sctx, cancel: cancel}
	}
	defer func() {
		for _, s := range class {
			s.cancel()
		}
	}()
	began := time.Now()
	door := make(chan struct{}, classAtOnce)
	var wg sync.WaitGroup
	for i, s := range class {
		wg.Go(func() {
			door <- struct{}{}
			defer func() { <-door }()
			// A prompt would be the admin token asked for: the page's
			// prompt is replaced before its scripts run.
			err := chromedp.Do(s.ctx,
				chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
					_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument,
						page.AddScriptToEvaluateOnNewDocumentParams{
							Source: `window.prompt = () => { window.askedForToken = true; return null; };`})
					return err
				}))
			if err == nil {
				err = chromedp.Do(s.ctx, chromedp.Navigate(ts.URL))
			}
			if err == nil {
				s.seat, err = chromedp.Run(s.ctx, chromedp.Evaluate[seat](fmt.Sprintf(studentSteps, refreshMS, classKeepAlive), chromedp.EvalAwaitPromise))
			}
			if err != nil {
				s.err = fmt.Errorf("student %d: %w", i, err)
			}
		})
	}
	wg.Wait()
	for i, s := range class {
		got := s.seat
		switch {
		case s.err != nil:
			t.Error(s.err)
		case got.Error != "":
			t.Errorf("student %d was refused: %s", i, got.Error)
		case got.Steps != "6" || got.Lit != 1 || got.LitBy != "B":
			t.Errorf("student %d: %s steps, %d lit for mutual exclusion (by %q), want 6 steps and B's SET lit", i, got.Steps, got.Lit, got.LitBy)
		case got.Asked || got.Token != "":
			t.Errorf("student %d was asked for the admin token (holds %q)", i, got.Token)
		case got.Session == "":
			t.Errorf("student %d holds no session", i)
		}
	}
	if n := tokens.Load(); n != 0 {
		t.Errorf("%d requests of the class carried an admin token", n)
	}
	if n := unauthorized.Load(); n != 0 {
		t.Errorf("%d requests of the class were refused for want of the token", n)
	}
	if n := limited.Load(); n != 0 {
		t.Errorf("%d requests of the class were answered 429", n)
	}
	if t.Failed() {
		return
	}
	t.Logf("%d students seated and stepped to the violation in %v; %d reads of /api/users, none answered 429",
		classSize, time.Since(began).Round(time.Millisecond), userReads.Load())
	if n := open(); n != classSize {
		t.Fatalf("%d sessions open with the class seated, want %d", n, classSize)
	}

	// Each student closes the tab. A page cannot tell a reload from a
	// close, so it ends nothing as it goes: the server's idle timer ends
	// the session of a closed tab. The browser stays open, as a
	// student's does.
	for i, s := range class {
		if err := chromedp.Do(s.ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, page.Close, cdp.Empty{})
			return err
		})); err != nil {
			t.Fatalf("closing student %d's tab: %v", i, err)
		}
		s.cancel()
	}
	for open() != 0 && bctx.Err() == nil {
		time.Sleep(200 * time.Millisecond)
	}
	if n := open(); n != 0 {
		t.Errorf("%d sessions still open after every tab closed", n)
	}
	t.Logf("every tab closed and its session ended after %v", time.Since(began).Round(time.Millisecond))
}

// statusRecorder remembers the status a handler answered.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

// Flush passes a flush on, for the handlers that stream.
func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
