package httpapi

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// smallText lists the visible text of the page drawn smaller than its
// floor: 16 px in a timeline (.lab-grid), 18 px elsewhere, SVG text
// included at the size it is shown (its font size times the chart's
// scale).
const smallText = `(() => {
	const out = [];
	const shown = (e) => e.getClientRects().length > 0 && getComputedStyle(e).visibility !== "hidden";
	for (const e of document.querySelectorAll("body *")) {
		if (!shown(e)) continue;
		const own = [...e.childNodes].some((n) => n.nodeType === Node.TEXT_NODE && n.textContent.trim() !== "");
		if (!own) continue;
		let px = parseFloat(getComputedStyle(e).fontSize);
		if (e instanceof SVGElement) {
			const m = e.getScreenCTM();
			px = parseFloat(e.getAttribute("font-size") || px) * (m ? m.a : 1);
		}
		const floor = e.closest(".lab-grid") ? 16 : 18;
		if (px < floor - 0.01) out.push(e.tagName + (e.id ? "#" + e.id : "") + "." + (e.getAttribute("class") || "") + " " + px.toFixed(1) + "px: " + e.textContent.trim().slice(0, 40));
	}
	return out.slice(0, 12);
})()`

// chartFacts is what TestBrowserRoom reads from a rush chart (sel): its
// tick labels, each line's dash pattern, and its line labels' boxes.
const chartFacts = `((sel) => {
	const svg = document.querySelector(sel);
	const labels = [...svg.querySelectorAll("text.line-label")].map((t) => {
		const r = t.getBoundingClientRect();
		return { strategy: t.dataset.strategy, top: r.top, bottom: r.bottom, left: r.left, right: r.right };
	});
	const texts = [...svg.querySelectorAll("text")].map((t) => t.textContent);
	return {
		ticks: texts.filter((t) => /^[0-9][0-9,.]*( s)?$/.test(t)),
		dashes: [...svg.querySelectorAll("polyline")].map((l) => l.getAttribute("stroke-dasharray") || "solid"),
		labels,
	};
})`

// TestBrowserRoom checks the page as a room sees it, on two short rushes
// run by the page (0 ms and 2 ms added): the chart's ticks are round, each
// line has its own dash pattern and a label where it ends, none
// overlapping; the two rushes are kept side by side with a bar per
// strategy and rush; projector mode is remembered across a reload, draws
// every text at 18 px or more (timelines at 16) at 1366x768 and 1024x768,
// and shows the rush's chart and its reading on one screen; at 412 px
// nothing runs off the side. The reading and its noise note are checked
// on the rush's own figures, varied: a winner only beyond the spread, the
// note where the run was short or the machine busy.
func TestBrowserRoom(t *testing.T) {
	t.Parallel() // a tab and a service of its own
	// With LOCKMARKET_SCREENSHOT set, it runs on redis-server the rushes
	// the page suggests (50 buyers, 10 s), and writes the screenshots of
	// projector mode and of the comparison beside that file.
	shots := os.Getenv(screenshotEnv) != ""
	b := redistest.Mini(t)
	buyers, listers, seconds := "20", "2", "2"
	if shots {
		b = redistest.Real(t)
		buyers, listers, seconds = "50", "5", "10"
	}
	_, ts := demoServer(t, withJobs(Config{Market: demoMarket(t, b), Env: output.NewEnv(b.Name, "")}, b))
	p := newTab(t, ts.URL)

	for i, rtt := range []string{"0", "2"} {
		p.do("run a rush at "+rtt+" ms",
			chromedp.SetValue(chromedp.CSS(`#rush-buyers`), buyers),
			chromedp.SetValue(chromedp.CSS(`#rush-listers`), listers),
			chromedp.SetValue(chromedp.CSS(`#rush-seconds`), seconds),
			chromedp.SetValue(chromedp.CSS(`#rush-rtt`), rtt),
			chromedp.Click(chromedp.CSS(`#rush-run`)))
		p.wait("the rush to end", fmt.Sprintf(`document.querySelectorAll("#rush-compare-runs .compare-run").length === %d`, i+1))
	}
	if got := p.text(`#rush-status`); !strings.HasPrefix(got, "done") {
		t.Fatalf("rush %s", got)
	}

	// The chart: round ticks, a dash pattern per line, a label per line
	// where it ends, no two labels overlapping.
	type box struct {
		Strategy                 string
		Top, Bottom, Left, Right float64
	}
	type facts struct {
		Ticks  []string `json:"ticks"`
		Dashes []string `json:"dashes"`
		Labels []box    `json:"labels"`
	}
	f, err := chromedp.Run(p.ctx, chromedp.Evaluate[facts](chartFacts+`("#rush-chart")`))
	if err != nil {
		t.Fatal(err)
	}
	checkRoundTicks(t, f.Ticks)
	seen := map[string]bool{}
	for _, d := range f.Dashes {
		if seen[d] {
			t.Errorf("two lines dashed %q: %q", d, f.Dashes)
		}
		seen[d] = true
	}
	if len(f.Dashes) != 4 || len(f.Labels) != 4 {
		t.Errorf("%d lines and %d line labels, want 4 of each", len(f.Dashes), len(f.Labels))
	}
	for i, a := range f.Labels {
		for _, c := range f.Labels[i+1:] {
			if a.Top < c.Bottom && c.Top < a.Bottom && a.Left < c.Right && c.Left < a.Right {
				t.Errorf("the labels of %s and %s overlap: %+v %+v", a.Strategy, c.Strategy, a, c)
			}
		}
	}

	// The comparison: both rushes side by side, a bar per strategy and
	// rush, each with its figure.
	side, err := chromedp.Run(p.ctx, chromedp.Evaluate[[]float64](`[...document.querySelectorAll("#rush-compare-runs .compare-run")].map((e) => e.getBoundingClientRect().top)`))
	if err != nil || len(side) != 2 || side[0] != side[1] {
		t.Errorf("the kept rushes' tops at 1280 px: %v (%v), want two side by side", side, err)
	}
	if n := p.count(`#rush-totals rect[data-strategy]`); n != 8 {
		t.Errorf("%d bars of totals, want 8 (4 strategies, 2 rushes)", n)
	}
	if got := p.text(`#rush-compare-runs`); !strings.Contains(got, "A: 0 ms added") || !strings.Contains(got, "B: 2 ms added") {
		t.Errorf("the kept rushes are titled %q", got)
	}
	if shots {
		shootTab(p, "#rush-compare", "demo-rush-compare.png")
	}

	// The reading and the noise note, on this rush's figures as measured
	// and as they would be on redis-server, shorter or longer, on a busy
	// or a quiet machine, with spreads apart or overlapping.
	for _, c := range []struct {
		name, change string
		reading      []string
		notReading   []string
		noise        string
	}{
		{name: "miniredis", change: `st.redis = "miniredis";`, reading: []string{"illustrative only"}, notReading: []string{"bought the most", "cannot tell"}},
		{name: "short", change: `st.redis = "redis-server"; st.strategy_duration_ms = 2500;`, noise: "each strategy ran only 2.5 s"},
		{name: "busy", change: `st.redis = "redis-server"; st.strategy_duration_ms = 10000; st.load_start = {load_avg_1m: 9.5, cpus: 2}; st.load_end = {load_avg_1m: 4.1, cpus: 2};`,
			noise: "load average 9.5 at the start, 4.1 at the end, on 2 CPUs"},
		{name: "quiet", change: `st.redis = "redis-server"; st.strategy_duration_ms = 10000;`},
		{name: "apart", change: `st.redis = "redis-server"; st.strategy_duration_ms = 10000;
			st.strategies.forEach((s, i) => { s.bought = 100 * (i + 1); s.series = [1, 2, 3, 4, 5].map((k) => ({t_ms: 2000 * k, purchases_per_s: 10 * (i + 1) + (k % 2)})); });`,
			reading: []string{"lua bought the most (400)", "slowest fifth"}},
		{name: "overlapping", change: `st.redis = "redis-server"; st.strategy_duration_ms = 10000;
			st.strategies.forEach((s, i) => { s.bought = 100 + i; s.series = [1, 2, 3, 4, 5].map((k) => ({t_ms: 2000 * k, purchases_per_s: 10 + 4 * (k % 2) + i})); });`,
			reading: []string{"cannot tell lua", "within their spread"}, notReading: []string{"bought the most"}},
	} {
		got, err := chromedp.Run(p.ctx, chromedp.Evaluate[[]string](`(() => {
			const st = JSON.parse(JSON.stringify(keptRushes()[1]));
			st.load_start = {load_avg_1m: 0.4, cpus: 2};
			st.load_end = {load_avg_1m: 0.9, cpus: 2};
			`+c.change+`
			return [rushReading(st), rushNoise(st)];
		})()`))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for _, want := range c.reading {
			if !strings.Contains(got[0], want) {
				t.Errorf("%s: the reading %q does not say %q", c.name, got[0], want)
			}
		}
		for _, not := range c.notReading {
			if strings.Contains(got[0], not) {
				t.Errorf("%s: the reading %q says %q", c.name, got[0], not)
			}
		}
		if (c.noise == "") != (got[1] == "") || !strings.Contains(got[1], c.noise) {
			t.Errorf("%s: the noise note %q, want %q", c.name, got[1], c.noise)
		}
		for _, promise := range []string{"to see it collapse", "will "} {
			if strings.Contains(got[0], promise) {
				t.Errorf("%s: the reading promises what it did not measure (%q): %q", c.name, promise, got[0])
			}
		}
	}

	// Projector mode, remembered across a reload; a session stepped in
	// the explorer draws a timeline.
	p.do("projector mode", chromedp.Click(chromedp.CSS(`#projector`)))
	p.do("reload", chromedp.Navigate(ts.URL), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="true"]`)))
	p.wait("the rush drawn again", `document.querySelectorAll("#rush-chart polyline").length === 4 && document.querySelector("#rush-reading").textContent !== ""`)
	if got := p.count(`html.projector #projector[aria-pressed="true"]`); got != 1 {
		t.Fatalf("projector mode is not on after a reload")
	}
	p.wait("the explorer's recipes", `document.querySelector("#explore-target").dataset.ready === "true"`)
	p.do("start recipe 1", chromedp.SetValue(chromedp.CSS(`#explore-target`), "recipe:1"), chromedp.Click(chromedp.CSS(`#explore-start`)))
	p.wait("the session", `document.querySelector("#explore-session").dataset.steps === "0"`)
	p.do("A starts", chromedp.Click(chromedp.CSS(`#explore-actions button[data-kind="start"][data-client="A"]`)))
	p.wait("step 1", `document.querySelector("#explore-session").dataset.steps === "1"`)
	for _, size := range [][2]int64{{1366, 768}, {1024, 768}} {
		w, h := size[0], size[1]
		p.do("resize", chromedp.EmulateViewport(w, h))
		small, err := chromedp.Run(p.ctx, chromedp.Evaluate[[]string](smallText))
		if err != nil {
			t.Fatal(err)
		}
		if len(small) > 0 {
			t.Errorf("at %dx%d in projector mode, text below its floor: %q", w, h, small)
		}
		// The chart and its reading on one screen: the chart scrolled to
		// the top, the reading ends within the window.
		fit, err := chromedp.Run(p.ctx, chromedp.Evaluate[[]float64](`(() => {
			document.querySelector("#rush-chart").scrollIntoView({block: "start"});
			return [document.querySelector("#rush-chart").getBoundingClientRect().top,
				document.querySelector("#rush-reading").getBoundingClientRect().bottom, window.innerHeight];
		})()`))
		if err != nil {
			t.Fatal(err)
		}
		if fit[0] < 0 || fit[1] > fit[2] {
			t.Errorf("at %dx%d the chart starts at %.0f px and its reading ends at %.0f px, beyond the %.0f px window", w, h, fit[0], fit[1], fit[2])
		}
		if shots {
			shot, err := chromedp.Run(p.ctx, chromedp.CaptureScreenshot())
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(filepath.Dir(os.Getenv(screenshotEnv)), fmt.Sprintf("demo-projector-%d.png", w))
			if err := os.WriteFile(path, shot, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("screenshot: %s", path)
		}
	}

	// Every control named, the new ones included.
	a11y, err := chromedp.Run(p.ctx, chromedp.Evaluate[struct {
		Count   int      `json:"count"`
		Unnamed []string `json:"unnamed"`
	}](unnamedControls))
	if err != nil {
		t.Fatal(err)
	}
	if len(a11y.Unnamed) > 0 {
		t.Errorf("%d focusable controls, %d without an accessible name: %q", a11y.Count, len(a11y.Unnamed), a11y.Unnamed)
	}

	// A phone: nothing runs off the side, in either mode.
	for _, projector := range []bool{true, false} {
		if !projector {
			p.do("projector mode off", chromedp.Click(chromedp.CSS(`#projector`)))
		}
		p.do("resize", chromedp.EmulateViewport(412, 915))
		width, err := chromedp.Run(p.ctx, chromedp.Evaluate[int64](`document.documentElement.scrollWidth`))
		if err != nil {
			t.Fatal(err)
		}
		if width > 412 {
			t.Errorf("at 412 px (projector mode %v) the page is %d px wide", projector, width)
		}
	}
}

// checkRoundTicks fails t unless the numeric labels of a chart's axes
// are round: each axis's ticks a multiple of one step of 1, 2 or 5 times
// a power of ten, from 0.
func checkRoundTicks(t *testing.T, labels []string) {
	t.Helper()
	var y, x []float64
	for _, l := range labels {
		v, err := strconv.ParseFloat(strings.TrimSuffix(strings.ReplaceAll(l, ",", ""), " s"), 64)
		if err != nil {
			t.Errorf("tick %q: %v", l, err)
			continue
		}
		if len(x) > 0 || (len(y) > 0 && v < y[len(y)-1]) {
			x = append(x, v) // the x axis starts again from 0
		} else {
			y = append(y, v)
		}
	}
	for _, axis := range [][]float64{y, x} {
		if len(axis) < 3 || axis[0] != 0 {
			t.Errorf("ticks %v, want 0 and at least two more", labels)
			return
		}
		step := axis[1]
		exp := math.Pow(10, math.Floor(math.Log10(step)))
		if m := step / exp; math.Abs(m-1) > 1e-9 && math.Abs(m-2) > 1e-9 && math.Abs(m-5) > 1e-9 {
			t.Errorf("tick step %v of %v is not 1, 2 or 5 times a power of ten", step, axis)
		}
		for i, v := range axis {
			if math.Abs(v-float64(i)*step) > step*1e-6 {
				t.Errorf("ticks %v are not evenly stepped by %v", axis, step)
				break
			}
		}
	}
}
