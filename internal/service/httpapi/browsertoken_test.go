package httpapi

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market"
)

// TestBrowserAdminToken drives the demo page against a service with an
// admin token: the first admin action asks for the token, sends it, and
// works; the next ones send it without asking again.
func TestBrowserAdminToken(t *testing.T) {
	t.Parallel() // a tab and a service of its own
	b := redistest.Mini(t)
	srv, ts := demoServer(t, Config{Market: demoMarket(t, b), AdminToken: "s3cret"})

	cctx, cancelTab := browserTab(t)
	defer cancelTab()
	tctx, cancel := redistest.UntilDeadline(cctx, t)
	defer cancel()

	// Answer every prompt with the token, and count them.
	var prompts atomic.Int32
	lctx, stopListening := context.WithCancel(tctx)
	done := make(chan struct{})
	opening := chromedp.Events(lctx, page.JavascriptDialogOpening)
	go func() {
		defer close(done)
		for e, err := range opening {
			if err != nil {
				return
			}
			if e.Type != page.DialogTypePrompt {
				continue
			}
			prompts.Add(1)
			go chromedp.Do(tctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
				_, err := cdp.Call(ctx, tg, page.HandleJavaScriptDialog,
					page.HandleJavaScriptDialogParams{Accept: true, PromptText: "s3cret"})
				return err
			}))
		}
	}()
	defer func() { stopListening(); <-done }()

	if err := chromedp.Do(tctx, chromedp.Navigate(ts.URL), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="true"]`))); err != nil {
		t.Fatal(err)
	}
	for i, st := range []market.Strategy{market.Lua, market.Watch} {
		got, err := chromedp.Run(tctx, chromedp.Evaluate[string](
			`api("PUT", "/api/strategy", {strategy: "`+string(st)+`"}).then((r) => r.strategy)`,
			chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("strategy %s from the page: %v", st, err)
		}
		if got != string(st) || srv.Strategy() != st {
			t.Fatalf("strategy %s from the page: answered %q, the server has %q", st, got, srv.Strategy())
		}
		if n := prompts.Load(); n != 1 {
			t.Errorf("after %d admin actions: %d prompts, want 1", i+1, n)
		}
	}
}
