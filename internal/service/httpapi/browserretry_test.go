package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// flakyFirstLoads answers the first requests of some paths 503, as a
// service busy with a class's pages may, and holds the one after them
// until release is closed, so that a test can read what the page says
// while it retries; a held request the browser abandons (its time limit
// ran out) is counted in abandoned.
type flakyFirstLoads struct {
	next    http.Handler
	refuse  map[string]int // path -> how many requests to answer 503
	held    string         // the path whose next request waits for release
	release chan struct{}

	mu        sync.Mutex
	seen      map[string]int
	abandoned int
}

func (f *flakyFirstLoads) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.seen[r.URL.Path]++
	n := f.seen[r.URL.Path]
	f.mu.Unlock()
	if n <= f.refuse[r.URL.Path] {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"error":{"code":"unavailable","message":"too busy for now"}}`))
		return
	}
	if r.URL.Path == f.held && n == f.refuse[r.URL.Path]+1 {
		select {
		case <-f.release:
		case <-r.Context().Done():
			f.mu.Lock()
			f.abandoned++
			f.mu.Unlock()
			return
		}
	}
	f.next.ServeHTTP(w, r)
}

// waitAbandoned waits until the service has seen n held requests
// abandoned (the browser's abort reaches it after the page has moved on),
// or ctx ends; it returns how many it saw.
func (f *flakyFirstLoads) waitAbandoned(ctx context.Context, n int) int {
	for {
		f.mu.Lock()
		got := f.abandoned
		f.mu.Unlock()
		if got >= n || ctx.Err() != nil {
			return got
		}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestBrowserFirstLoadsRetry: a page whose first loads (the service's
// info, the market, the recipes) are refused by a busy service tries them
// again by itself and says so meanwhile, and comes up whole: the header
// names the market, the market is listed, and the lab and the explorer
// offer the recipes. Nothing is reloaded by the test.
func TestBrowserFirstLoadsRetry(t *testing.T) {
	t.Parallel() // a tab and a service of its own
	b := redistest.Mini(t)
	srv, err := New(withJobs(Config{Market: demoMarket(t, b), Env: output.NewEnv(b.Name, "")}, b))
	if err != nil {
		t.Fatal(err)
	}
	flaky := &flakyFirstLoads{next: srv.Handler(), seen: map[string]int{}, release: make(chan struct{}),
		refuse: map[string]int{"/api/info": 2, "/api/lab/scenarios": 2, "/api/market": 1}, held: "/api/info"}
	ts := httptest.NewServer(flaky)
	released := sync.OnceFunc(func() { close(flaky.release) })
	t.Cleanup(func() {
		released()
		ts.Close()
		srv.Close()
	})

	cctx, cancelTab := browserTab(t)
	defer cancelTab()
	tctx, cancel := redistest.UntilDeadline(cctx, t)
	defer cancel()
	defer watchExceptions(t, tctx)()

	// While the third request for the info is held, the page says what
	// it is trying again.
	retryingInfo := `document.querySelector("#retrying").textContent.includes("Loading the service's info failed")`
	if err := chromedp.Do(tctx, chromedp.Navigate(ts.URL)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(tctx, chromedp.Poll[bool](retryingInfo, chromedp.WithPollingTimeout(0))); err != nil {
		t.Fatalf("the page does not say it tries the info again: %v", err)
	}
	said, err := chromedp.Run(tctx, chromedp.Text(chromedp.CSS("#retrying")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(said, "too busy for now") || !strings.Contains(said, "trying again in") {
		t.Errorf("while retrying the page says %q, want the service's message and when it tries again", said)
	}
	released()

	if err := chromedp.Do(tctx, chromedp.WaitVisible(chromedp.CSS(`body[data-ready="true"]`)),
		chromedp.WaitReady(chromedp.CSS(`#lab-scenario[data-ready="true"]`)),
		chromedp.WaitReady(chromedp.CSS(`#explore-target[data-ready="true"]`))); err != nil {
		t.Fatalf("the page does not come up after its retries: %v", err)
	}
	if _, err := chromedp.Run(tctx, chromedp.Poll[bool](`document.querySelector("#retrying").hidden`, chromedp.WithPollingTimeout(0))); err != nil {
		t.Fatalf("the page still says it retries: %v", err)
	}
	info, err := chromedp.Run(tctx, chromedp.Text(chromedp.CSS("#info")))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(info, "connecting") || !strings.Contains(info, "market") {
		t.Errorf("the header after the retries: %q, want the market named", info)
	}
	counts, err := chromedp.Run(tctx, chromedp.Evaluate[[]int](`[
		Number(document.body.dataset.retries),
		document.querySelectorAll("#market tbody tr").length,
		document.querySelectorAll("#lab-scenario option").length,
		document.querySelectorAll("#explore-target option").length]`))
	if err != nil {
		t.Fatal(err)
	}
	// One retry per refused request: 2 of the info, 2 of the recipes (the
	// lab and the explorer share one load) and 1 of the market; and one
	// more if the held request of the info outlasted its time limit
	// before the test released it.
	abandoned := 0
	if counts[0] > 5 {
		abandoned = flaky.waitAbandoned(tctx, counts[0]-5)
	}
	if counts[0] != 5+abandoned {
		t.Errorf("%d retries, want %d (one per refused or abandoned request)", counts[0], 5+abandoned)
	}
	if counts[1] == 0 || counts[2] == 0 || counts[3] == 0 {
		t.Errorf("after the retries: %d listings shown, %d options in the lab, %d in the explorer; want each",
			counts[1], counts[2], counts[3])
	}
	flaky.mu.Lock()
	defer flaky.mu.Unlock()
	if n := flaky.seen["/api/lab/scenarios"]; n != 3 {
		t.Errorf("/api/lab/scenarios asked %d times, want 3 (2 refused, then once for both)", n)
	}
}

// keepRetryingLines, run in a page before its scripts, keeps in
// window.retryingLines every text #retrying takes.
const keepRetryingLines = `window.retryingLines = [];
document.addEventListener("DOMContentLoaded", () => {
	const r = document.querySelector("#retrying");
	new MutationObserver(() => window.retryingLines.push(r.textContent)).observe(r,
		{childList: true, characterData: true, subtree: true});
});`

// TestBrowserFirstLoadHangs: a first load the service never answers (the
// market's, held) is abandoned at its time limit, said on the page and
// tried again, and the page comes up whole without a reload.
func TestBrowserFirstLoadHangs(t *testing.T) {
	t.Parallel() // a tab and a service of its own
	b := redistest.Mini(t)
	srv, err := New(withJobs(Config{Market: demoMarket(t, b), Env: output.NewEnv(b.Name, "")}, b))
	if err != nil {
		t.Fatal(err)
	}
	hang := &flakyFirstLoads{next: srv.Handler(), seen: map[string]int{}, release: make(chan struct{}),
		refuse: map[string]int{}, held: "/api/market"}
	ts := httptest.NewServer(hang)
	t.Cleanup(func() {
		close(hang.release)
		ts.Close()
		srv.Close()
	})

	cctx, cancelTab := browserTab(t)
	defer cancelTab()
	tctx, cancel := redistest.UntilDeadline(cctx, t)
	defer cancel()
	defer watchExceptions(t, tctx)()

	// Every line #retrying shows is kept, however briefly it shows.
	if err := chromedp.Do(tctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument,
			page.AddScriptToEvaluateOnNewDocumentParams{Source: keepRetryingLines})
		return err
	}), chromedp.Navigate(ts.URL)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(tctx, chromedp.WaitVisible(chromedp.CSS(`body[data-ready="true"]`)),
		chromedp.WaitReady(chromedp.CSS(`#explore-target[data-ready="true"]`))); err != nil {
		t.Fatalf("the page does not come up after the market's load is tried again: %v", err)
	}
	rows, err := chromedp.Run(tctx, chromedp.Evaluate[int](`document.querySelectorAll("#market tbody tr").length`))
	if err != nil {
		t.Fatal(err)
	}
	if rows == 0 {
		t.Error("no listing shown after the market's load was tried again")
	}
	lines, err := chromedp.Run(tctx, chromedp.Evaluate[[]string](`window.retryingLines`))
	if err != nil {
		t.Fatal(err)
	}
	const want = "Loading the market and the users failed (no answer within 10 s); trying again in 1 s."
	if !slices.Contains(lines, want) {
		t.Errorf("the page said %q while it retried; want %q", lines, want)
	}
	abandoned := hang.waitAbandoned(tctx, 1)
	hang.mu.Lock()
	defer hang.mu.Unlock()
	if abandoned != 1 || hang.seen["/api/market"] < 2 {
		t.Errorf("the held market load abandoned %d times, the market asked %d times; "+
			"want the held one abandoned and asked again", abandoned, hang.seen["/api/market"])
	}
}
