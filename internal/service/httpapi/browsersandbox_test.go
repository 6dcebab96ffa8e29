package httpapi

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/service/exploresession"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// TestBrowserNoSandbox drives the page of a service that has no
// redis-server to run pasted Lua on (its configuration names a binary
// that is not there): pasting a lock is refused with a message that says
// how to enable it, and the rest of the page works: a gallery recipe's
// session starts and steps.
func TestBrowserNoSandbox(t *testing.T) {
	t.Parallel() // a tab and a service of its own
	b := redistest.Mini(t)
	cfg := withJobs(Config{Market: demoMarket(t, b), Env: output.NewEnv(b.Name, "")}, b)
	cfg.Explore.Close()
	cfg.Explore = exploresession.New(exploresession.Config{RedisServer: filepath.Join(t.TempDir(), "redis-server")})
	_, ts := demoServer(t, cfg)
	p := newTab(t, ts.URL)

	p.wait("the explorer's recipes", `document.querySelector("#explore-target").dataset.ready === "true"`)
	p.do("paste a lock and start",
		chromedp.SetValue(chromedp.CSS(`#explore-target`), "lua:"),
		chromedp.Evaluate[chromedp.Void](`void document.querySelector("#explore-target").dispatchEvent(new Event("change"))`),
		chromedp.SetValue(chromedp.CSS(`#explore-lua-acquire`), "return redis.call('SET', KEYS[1], ARGV[1], 'NX') and 1 or 0"),
		chromedp.SetValue(chromedp.CSS(`#explore-lua-release`), "return redis.call('DEL', KEYS[1])"),
		chromedp.Click(chromedp.CSS(`#explore-start`)))
	p.wait("the refusal", `!document.querySelector("#explore-error").hidden`)
	if got := p.text(`#explore-error`); strings.Contains(got, "invalid_request") || !strings.Contains(got, "install redis-server") ||
		p.count(`#explore-error[data-code="invalid_request"]`) != 1 {
		t.Errorf("the refusal shown: %q, want it in words (its code kept out of sight)", got)
	}

	p.do("start recipe 1",
		chromedp.SetValue(chromedp.CSS(`#explore-target`), "recipe:1"),
		chromedp.Evaluate[chromedp.Void](`void document.querySelector("#explore-target").dispatchEvent(new Event("change"))`),
		chromedp.Click(chromedp.CSS(`#explore-start`)))
	p.wait("the session of recipe 1", `document.querySelector("#explore-session").dataset.steps === "0"`)
	p.do("A starts", chromedp.Click(chromedp.CSS(`#explore-actions button[data-kind="start"][data-client="A"]`)))
	p.wait("step 1", `document.querySelector("#explore-session").dataset.steps === "1"`)
	if n := p.count(`#explore-error:not([hidden])`); n != 0 {
		t.Errorf("an error after the recipe's step: %q", p.text(`#explore-error`))
	}
}
