// Command loadclass measures how a class's pages come up when all load at
// once: it starts a market binary on loopback (-seed-demo, an admin
// token), then opens N pages of the demo page at the same moment, each in
// a browser context of its own (as separate as an incognito window) of
// one headless Chromium, and times each until it is usable: the header
// names the market, the market's listings are drawn, and the lab and the
// explorer offer the recipes. A page that tried a first load again says
// so (body's data-retries); the count is printed beside its time. A page
// not usable within -wait is printed with what it shows. See ../README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"sync"
	"time"

	"github.com/chromedp/chromedp"
)

// usable is the page's own test of being usable, evaluated in it.
const usable = `document.body.dataset.ready === "true" &&
	!document.querySelector("#info").textContent.includes("connecting") &&
	document.querySelectorAll("#market tbody tr").length > 0 &&
	document.querySelector("#lab-scenario").dataset.ready === "true" &&
	document.querySelector("#explore-target").dataset.ready === "true"`

// shown is what a page shows, for one that did not come up.
const shown = `[document.querySelector("#info").textContent,
	document.querySelector("#retrying").textContent,
	String(document.querySelectorAll("#market tbody tr").length) + " listings",
	String(document.querySelectorAll("#explore-target option").length) + " explorer options",
	[...document.querySelectorAll("#errors .error")].map((e) => e.textContent).join(" | ")].join("; ")`

// page is one page's outcome.
type page struct {
	n       int
	took    time.Duration
	retries int
	err     error
	shows   string
}

func main() {
	bin := flag.String("market", "", "market binary")
	n := flag.Int("n", 40, "pages")
	port := flag.Int("port", 18491, "the market's port")
	wait := flag.Duration("wait", 10*time.Minute, "how long a page may take to come up")
	flag.Parse()
	chrome, err := exec.LookPath("chromium")
	if *bin == "" || err != nil {
		fmt.Fprintln(os.Stderr, "usage: loadclass -market PATH [-n 40] [-port 18491] [-wait 10m] (needs chromium)")
		os.Exit(2)
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/", *port)
	stop, err := startMarket(*bin, *port, url)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadclass:", err)
		os.Exit(1)
	}
	defer stop()

	profile, err := os.MkdirTemp("", "loadclass-chromium-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadclass:", err)
		os.Exit(1)
	}
	defer os.RemoveAll(profile)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(chrome),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(profile), chromedp.WindowSize(1280, 1000))
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	if err := chromedp.Do(bctx); err != nil {
		fmt.Fprintln(os.Stderr, "loadclass: start chromium:", err)
		os.Exit(1)
	}

	pages := make([]page, *n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	began := time.Now()
	for i := range pages {
		wg.Go(func() { pages[i] = load(bctx, i+1, url, *wait, start) })
	}
	close(start)
	wg.Wait()
	code := report(pages, time.Since(began))
	// os.Exit runs no deferred call: end the browser and the market first.
	cancelBrowser()
	cancelAlloc()
	stop()
	os.Exit(code)
}

// load opens the page in a browser context of its own when start closes,
// and times it until usable.
func load(bctx context.Context, n int, url string, wait time.Duration, start <-chan struct{}) page {
	ctx, cancel := chromedp.NewContext(bctx, chromedp.WithNewBrowserContext())
	defer cancel()
	// The tab itself is opened before the start, so that the pages
	// begin loading together.
	if err := chromedp.Do(ctx); err != nil {
		return page{n: n, err: err}
	}
	<-start
	t0 := time.Now()
	tctx, cancelWait := context.WithTimeout(ctx, wait)
	defer cancelWait()
	err := chromedp.Do(tctx, chromedp.Navigate(url))
	if err == nil {
		_, err = chromedp.Run(tctx, chromedp.Poll[bool](usable, chromedp.WithPollingInterval(50*time.Millisecond),
			chromedp.WithPollingTimeout(wait)))
	}
	p := page{n: n, took: time.Since(t0), err: err}
	sctx, cancelShow := context.WithTimeout(ctx, 30*time.Second)
	defer cancelShow()
	p.retries, _ = chromedp.Run(sctx, chromedp.Evaluate[int](`Number(document.body.dataset.retries || 0)`))
	if err != nil {
		p.shows, _ = chromedp.Run(sctx, chromedp.Evaluate[string](shown))
	}
	return p
}

// report prints each page, slowest first, and a summary; it returns the
// exit status: 0 when every page came up.
func report(pages []page, all time.Duration) int {
	slices.SortFunc(pages, func(a, b page) int { return int(b.took - a.took) })
	failed, retried := 0, 0
	for _, p := range pages {
		line := fmt.Sprintf("page %2d: usable after %6.2f s, %d retries", p.n, p.took.Seconds(), p.retries)
		if p.err != nil {
			failed++
			line = fmt.Sprintf("page %2d: NOT usable after %.2f s (%v), %d retries; it shows: %s",
				p.n, p.took.Seconds(), p.err, p.retries, p.shows)
		}
		if p.retries > 0 {
			retried++
		}
		fmt.Println(line)
	}
	median := pages[len(pages)/2].took
	fmt.Printf("%d pages opened at once: %d usable, %d not; slowest %.2f s, median %.2f s; "+
		"%d pages tried a first load again; all done in %.2f s\n", len(pages), len(pages)-failed, failed,
		pages[0].took.Seconds(), median.Seconds(), retried, all.Seconds())
	if failed > 0 {
		return 1
	}
	return 0
}

// startMarket starts the market binary on port and waits until url
// answers; stop ends it.
func startMarket(bin string, port int, url string) (stop func(), err error) {
	if ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err != nil {
		return nil, fmt.Errorf("port %d: %w", port, err)
	} else {
		ln.Close()
	}
	cmd := exec.Command(bin, "-addr", fmt.Sprintf("127.0.0.1:%d", port), "-redis", "auto", "-seed-demo",
		"-admin-token", "the-teachers-own")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	stop = func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if res, err := http.Get(url + "api/market"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return stop, nil
			}
		}
		if time.Now().After(deadline) {
			stop()
			return nil, errors.New("the market did not answer within 2 minutes")
		}
	}
}
