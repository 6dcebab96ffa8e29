package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

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
// has an accessible name, and the slider a text value; a step or an undo
// taken from the keyboard leaves the focus on the control used; a reload
// comes back to the tab's session with what was typed, and says so
// plainly once the session has ended; errors are shown in words, without
// the API's codes.
func TestBrowserPage(t *testing.T) {
	t.Parallel() // a tab and a service of its own
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
	p.wait("40 refreshes and Alice's new item", `refreshes - window.refreshesBefore >= 40 && document.querySelector('#user-alice .chip[data-item="quill"]') !== null`)
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
	p.wait("the explorer's recipes", `document.querySelector("#explore-target").dataset.ready === "true"`)
	p.do("start recipe 1", chromedp.SetValue(chromedp.CSS(`#explore-target`), "recipe:1"), chromedp.Click(chromedp.CSS(`#explore-start`)))
	p.wait("the session", `document.querySelector("#explore-session").dataset.steps === "0"`)
	p.do("A starts", chromedp.Click(chromedp.CSS(`#explore-actions button[data-kind="start"][data-client="A"]`)))
	p.wait("step 1", `document.querySelector("#explore-session").dataset.steps === "1"`)
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

	checkKeyboard(t, p)
	checkReload(t, p)
}

// activeElement says where the page's focus is.
const activeElement = `(() => {
	const a = document.activeElement;
	return {id: a.id, kind: a.dataset.kind || "", client: a.dataset.client || "",
		in_actions: a.closest("#explore-actions") !== null, tag: a.tagName};
})()`

type focused struct {
	ID        string `json:"id"`
	Kind      string `json:"kind"`
	Client    string `json:"client"`
	InActions bool   `json:"in_actions"`
	Tag       string `json:"tag"`
}

// press presses Enter on sel, as a keyboard does, and waits for the
// session to have steps steps; it returns where the focus is then.
func press(p *tab, sel string, steps int) focused {
	p.t.Helper()
	p.do("press "+sel, chromedp.Focus(chromedp.CSS(sel)), chromedp.KeyEvent("\r"))
	p.wait(fmt.Sprintf("%d steps", steps), fmt.Sprintf(`document.querySelector("#explore-session").dataset.steps === "%d"`, steps))
	f, err := chromedp.Run(p.ctx, chromedp.Evaluate[focused](activeElement))
	if err != nil {
		p.t.Fatal(err)
	}
	return f
}

// checkKeyboard steps the session of TestBrowserPage (one step taken)
// from the keyboard: the focus stays on the control used, or on the
// nearest one standing, never back at the top of the page. The first
// control reached by Tab is the skip link.
func checkKeyboard(t *testing.T, p *tab) {
	if f := press(p, `#explore-actions button[data-kind="run"][data-client="A"]`, 2); !f.InActions || f.Client != "A" {
		t.Errorf("after A's step from the keyboard the focus is on %+v, want A's next action", f)
	}
	if f := press(p, `#explore-actions button[data-kind="start"][data-client="B"]`, 3); !f.InActions || f.Client != "B" {
		t.Errorf("after B's start from the keyboard the focus is on %+v, want B's next action", f)
	}
	if f := press(p, `#explore-undo`, 2); f.ID != "explore-undo" {
		t.Errorf("after an undo from the keyboard the focus is on %+v, want the undo button", f)
	}
	p.do("undo once more", chromedp.KeyEvent("\r"))
	p.wait("1 step", `document.querySelector("#explore-session").dataset.steps === "1"`)
	// The last undo disables its button: the focus goes to the actions.
	if f := press(p, `#explore-undo`, 0); !f.InActions {
		t.Errorf("after the last undo the focus is on %+v, want the next actions", f)
	}
	p.do("the first Tab", chromedp.Evaluate[chromedp.Void](`void document.activeElement.blur()`),
		chromedp.Evaluate[chromedp.Void](`void window.scrollTo(0, 0)`))
	first, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](`document.querySelector("button, input, select, textarea, a[href]").textContent`))
	if err != nil || !strings.HasPrefix(first, "Skip to") {
		t.Errorf("the first control of the page is %q (%v), want a skip link", first, err)
	}
	p.do("the skip link", chromedp.Focus(chromedp.CSS(`.skip a[href="#explore-panel"]`)), chromedp.KeyEvent("\r"))
	p.wait("the skip", `document.activeElement !== document.querySelector('.skip a[href="#explore-panel"]')`)
	if f, err := chromedp.Run(p.ctx, chromedp.Evaluate[focused](activeElement)); err != nil || f.ID != "explore-panel" {
		t.Errorf("the skip link took the focus to %+v (%v), want the explorer", f, err)
	}
}

// checkReload reloads the page of checkKeyboard's session, with Lua
// typed into the paste panel and a round trip into the rush's form: the
// page comes back to its session, and to what was typed. The session
// ended, a reload says so in words. A refused paste is shown in words.
func checkReload(t *testing.T, p *tab) {
	p.do("A starts", chromedp.Click(chromedp.CSS(`#explore-actions button[data-kind="start"][data-client="A"]`)))
	p.wait("1 step", `document.querySelector("#explore-session").dataset.steps === "1"`)
	const lua = "return redis.call('SET', KEYS[1], ARGV[1], 'NX') and 1 or 0"
	p.do("type a round trip and paste a lock",
		chromedp.SetValue(chromedp.CSS(`#rush-rtt`), ""),
		chromedp.SendKeys(chromedp.CSS(`#rush-rtt`), "2"),
		chromedp.SetValue(chromedp.CSS(`#explore-target`), "lua:"),
		chromedp.Evaluate[chromedp.Void](`void document.querySelector("#explore-target").dispatchEvent(new Event("change"))`),
		chromedp.SendKeys(chromedp.CSS(`#explore-lua-acquire`), lua))
	before, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](`explore.id`))
	if err != nil || before == "" {
		t.Fatalf("the session's id before the reload: %q (%v)", before, err)
	}
	type page struct {
		ID, Target, Acquire, RTT, Steps string
		Lua, Reattached                 bool
	}
	reload := func() page {
		t.Helper()
		p.do("reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="true"]`)))
		p.wait("the explorer's recipes", `document.querySelector("#explore-target").dataset.ready === "true"`)
		p.wait("the session or its end", `document.querySelector("#explore-session").dataset.reattached === "true" ||
			!document.querySelector("#explore-error").hidden`)
		got, err := chromedp.Run(p.ctx, chromedp.Evaluate[page](`({ID: explore.id,
			Target: document.querySelector("#explore-target").value,
			Acquire: document.querySelector("#explore-lua-acquire").value,
			RTT: document.querySelector("#rush-rtt").value,
			Steps: document.querySelector("#explore-session").dataset.steps || "",
			Lua: !document.querySelector("#explore-lua").hidden,
			Reattached: document.querySelector("#explore-session").dataset.reattached === "true"})`))
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	got := reload()
	if !got.Reattached || got.ID != before || got.Steps != "1" {
		t.Errorf("after the reload the session is %q with %q steps (reattached: %v), want %q with 1: %s",
			got.ID, got.Steps, got.Reattached, before, p.text(`#explore-error`))
	}
	if got.Target != "lua:" || !got.Lua || got.Acquire != lua || got.RTT != "2" {
		t.Errorf("after the reload: target %q (panel shown: %v), acquire %q, round trip %q; want what was typed",
			got.Target, got.Lua, got.Acquire, got.RTT)
	}

	// The session ended (by the server, as its idle timer does): the
	// reload says so, and keeps what was typed.
	status, err := chromedp.Run(p.ctx, chromedp.Evaluate[int](`fetch("/api/explore/sessions/" + explore.id, {method: "DELETE"}).then((r) => r.status)`,
		chromedp.EvalAwaitPromise))
	if err != nil || status != http.StatusNoContent {
		t.Fatalf("ending the session: %d (%v)", status, err)
	}
	got = reload()
	if shown := p.text(`#explore-error`); got.Reattached || got.ID != "" || !strings.Contains(shown, "session has ended") ||
		strings.Contains(shown, "not_found") || got.Acquire != lua {
		t.Errorf("after the session ended, a reload shows %q (reattached: %v, id %q, acquire %q)", shown, got.Reattached, got.ID, got.Acquire)
	}

	// A paste that does not parse is refused in words: its script and
	// line, not the API's code or the code's names.
	p.do("paste a lock that does not parse",
		chromedp.SetValue(chromedp.CSS(`#explore-lua-acquire`), "retur n"),
		chromedp.SetValue(chromedp.CSS(`#explore-lua-release`), "return 0"),
		chromedp.Evaluate[chromedp.Void](`void (document.querySelector("#explore-error").hidden = true)`),
		chromedp.Click(chromedp.CSS(`#explore-start`)))
	p.wait("the refusal", `!document.querySelector("#explore-error").hidden`)
	shown := p.text(`#explore-error`)
	for _, internal := range []string{"invalid_request", "invalid request", "lua.acquire", "explore:"} {
		if strings.Contains(shown, internal) {
			t.Errorf("the refusal shown says %q: %q", internal, shown)
		}
	}
	if !strings.Contains(shown, "acquire script") || !strings.Contains(shown, "line 1") {
		t.Errorf("the refusal shown: %q, want the script and its line", shown)
	}

	// A search that runs through a reload is followed after it, and can
	// be cancelled: the fix of recipe 6, whose search is long.
	p.do("find a bug in recipe 6's fix",
		chromedp.SetValue(chromedp.CSS(`#explore-target`), "recipe:6"),
		chromedp.Evaluate[chromedp.Void](`void document.querySelector("#explore-target").dispatchEvent(new Event("change"))`),
		chromedp.Evaluate[chromedp.Void](`void (document.querySelector("#explore-fixed").checked = true)`),
		chromedp.Click(chromedp.CSS(`#explore-start`)))
	p.wait("the session of recipe 6's fix", `document.querySelector("#explore-session").dataset.steps === "0"`)
	p.do("find a bug", chromedp.Click(chromedp.CSS(`#explore-find`)))
	p.wait("the search", `!document.querySelector("#explore-progress").hidden || document.querySelector("#explore-verdict").dataset.found !== ""`)
	if p.count(`#explore-progress:not([hidden])`) == 0 {
		t.Logf("the search ended before the reload: %s", p.text(`#explore-verdict`))
		return
	}
	if got = reload(); !got.Reattached {
		t.Fatalf("no session after the reload during a search: %s", p.text(`#explore-error`))
	}
	p.wait("the search followed", `!document.querySelector("#explore-progress").hidden && !document.querySelector("#explore-cancel").hidden ||
		document.querySelector("#explore-verdict").dataset.found !== ""`)
	if p.count(`#explore-cancel:not([hidden])`) == 1 {
		p.do("cancel the search", chromedp.Click(chromedp.CSS(`#explore-cancel`)))
	}
	p.wait("the search's end", `document.querySelector("#explore-verdict").dataset.found !== ""`)
	t.Logf("the search followed through a reload: %s", p.text(`#explore-verdict`))
}
