package httpapi

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market"
)

// unnamedControls lists the page's focusable controls that have no
// accessible name (a placeholder is not one), and counts them all.
const unnamedControls = `(() => {
	const name = (e) => {
		if (e.getAttribute("aria-label")) return e.getAttribute("aria-label");
		const by = e.getAttribute("aria-labelledby");
		if (by) return by.split(/\s+/).map((id) => (document.getElementById(id) || {}).textContent || "").join(" ");
		if (e.labels && e.labels.length > 0) return [...e.labels].map((l) => l.textContent).join(" ");
		if (e.tagName === "BUTTON" || e.tagName === "A" || e.tagName === "SUMMARY") return e.textContent;
		return e.getAttribute("title") || "";
	};
	const all = [...document.querySelectorAll("button, input, select, textarea, a[href], summary, [tabindex]")]
		.filter((e) => !e.disabled && e.getAttribute("tabindex") !== "-1");
	return { count: all.length, unnamed: all.filter((e) => name(e).trim() === "").map((e) => e.outerHTML.slice(0, 120)) };
})()`

// TestBrowserPage checks the page as a phone, a keyboard and a screen
// reader meet it: at 412 px wide nothing runs off the side (with a session
// stepped in the explorer); a price being typed, and its focus, survive
// the refreshes while the user's card changes; every focusable control
// has an accessible name, and the slider a text value.
func TestBrowserPage(t *testing.T) {
	t.Parallel() // a browser and a service of its own
	b := redistest.Mini(t)
	m := demoMarket(t, b, market.WithLedger(market.NewLedger()))
	_, ts := demoServer(t, withJobs(Config{Market: m, Env: output.NewEnv(b.Name, "")}, b))
	p := newTab(t, ts.URL)

	// A price typed into Alice's card survives the refreshes, focus
	// included, while her card changes (she is sold an item behind the
	// page's back, so her card is rebuilt). The refresh is the page's
	// own, run every 50 ms instead of 3 s: 40 of them are 2 minutes of
	// the real page.
	p.do("type a price", chromedp.Click(chromedp.CSS(`#user-alice input.price`)),
		chromedp.SendKeys(chromedp.CSS(`#user-alice input.price`), "123"))
	p.do("refresh faster", chromedp.Evaluate[chromedp.Void](`void (window.refreshesBefore = refreshes, setRefreshInterval(50))`))
	if err := m.GrantItem(context.Background(), "alice", "quill"); err != nil {
		t.Fatal(err)
	}
	p.wait("40 refreshes and Alice's new item", `refreshes - window.refreshesBefore >= 40 && document.querySelector('#user-alice .chip[data-item="quill"]') !== null`, time.Minute)
	p.do("type more", chromedp.SendKeys(chromedp.CSS(`#user-alice input.price`), "4"))
	got, err := chromedp.Run(p.ctx, chromedp.Evaluate[struct {
		Value   string `json:"value"`
		Focused bool   `json:"focused"`
		Active  string `json:"active"`
	}](`({value: document.querySelector("#user-alice input.price").value,
		focused: document.activeElement === document.querySelector("#user-alice input.price"),
		active: document.activeElement.outerHTML.slice(0, 100)})`))
	if err != nil {
		t.Fatal(err)
	}
	if got.Value != "1234" || !got.Focused {
		t.Errorf("after the refreshes the price reads %q (focused: %v, %s), want 1234 typed on", got.Value, got.Focused, got.Active)
	}
	p.do("refresh as usual", chromedp.Evaluate[chromedp.Void](`void setRefreshInterval(3000)`))

	// A session stepped in the explorer, for its controls and its width.
	p.wait("the explorer's recipes", `document.querySelector("#explore-target").dataset.ready === "true"`, 30*time.Second)
	p.do("start recipe 1", chromedp.SetValue(chromedp.CSS(`#explore-target`), "recipe:1"), chromedp.Click(chromedp.CSS(`#explore-start`)))
	p.wait("the session", `document.querySelector("#explore-session").dataset.steps === "0"`, 30*time.Second)
	p.do("A starts", chromedp.Click(chromedp.CSS(`#explore-actions button[data-kind="start"][data-client="A"]`)))
	p.wait("step 1", `document.querySelector("#explore-session").dataset.steps === "1"`, 30*time.Second)
	if got := p.text(`#explore-actions button[data-kind="run"][data-client="A"]`); !strings.HasPrefix(got, "A: ") {
		t.Errorf("A's next command is labelled %q, without its client", got)
	}
	if got, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](`document.querySelector("#explore-slider").getAttribute("aria-valuetext")`)); err != nil || got != "1 of 1 steps" {
		t.Errorf("the slider's text value: %q (%v)", got, err)
	}

	a11y, err := chromedp.Run(p.ctx, chromedp.Evaluate[struct {
		Count   int      `json:"count"`
		Unnamed []string `json:"unnamed"`
	}](unnamedControls))
	if err != nil {
		t.Fatal(err)
	}
	if a11y.Count < 30 || len(a11y.Unnamed) > 0 {
		t.Errorf("%d focusable controls, %d without an accessible name: %q", a11y.Count, len(a11y.Unnamed), a11y.Unnamed)
	}
	t.Logf("%d focusable controls, every one named", a11y.Count)

	for _, w := range []int64{412, 1024} {
		p.do("resize", chromedp.EmulateViewport(w, 915))
		width, err := chromedp.Run(p.ctx, chromedp.Evaluate[int64](`document.documentElement.scrollWidth`))
		if err != nil {
			t.Fatal(err)
		}
		if width > w {
			wide, _ := chromedp.Run(p.ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("body *")]
				.filter((e) => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
				.slice(0, 8).map((e) => e.tagName + "#" + e.id + "." + e.className + " " + Math.round(e.getBoundingClientRect().right))`))
			t.Errorf("at %d px the page is %d px wide; wide elements: %q", w, width, wide)
		}
	}
}
