package timeline_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	tl "github.com/lockmarket/lockmarket/internal/timeline"
)

// sample records a lease that runs out while its holder is paused, a
// second holder, and a late commit.
func sample(t *testing.T) tl.Timeline {
	t.Helper()
	be := redistest.Mini(t)
	rdb := be.NewClient(t)
	rdb.AddHook(tl.Hook{})
	rec := tl.NewRecorder("{m}:")
	ctx := context.Background()
	a, b := rec.As(ctx, "A ann"), rec.As(ctx, "B bob")
	rdb.SetNX(a, lock, "tok-a", time.Minute)
	rec.Add("A ann", tl.PauseStart, "paused before its commit")
	be.Mini.FastForward(time.Minute)
	rec.LeaseExpired(lock, "")
	rdb.SetNX(b, lock, "tok-b", time.Minute)
	rec.Add("A ann", tl.PauseEnd, "goes on")
	rdb.TxPipelined(a, func(p redis.Pipeliner) error {
		p.SAdd(a, "{m}:inventory:ann", "idol")
		return nil
	})
	rec.Finding(true, "item <idol> & co sold twice")
	return rec.Finish("recipe <6>", "flawed", `Broken: "sold twice".`, 2)
}

// TestSVG checks that the drawing is well-formed XML (text escaped) with
// a lane per client, the lease bars, the pause and the marked step.
func TestSVG(t *testing.T) {
	var buf bytes.Buffer
	if err := sample(t).SVG(&buf); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(buf.Bytes()))
	var text strings.Builder
	rects := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v\n%s", err, buf.String())
		}
		switch tok := tok.(type) {
		case xml.CharData:
			text.Write(tok)
			text.WriteString("\n")
		case xml.StartElement:
			if tok.Name.Local == "rect" {
				rects++
			}
		}
	}
	for _, want := range []string{"recipe <6> — flawed", "A ann", "B bob", "!! commits after its lease",
		"item <idol> & co sold twice", `Broken: "sold twice".`, "paused before its commit"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("no %q in the text of the SVG:\n%s", want, text.String())
		}
	}
	for _, want := range []string{`fill="url(#pause)"`, `fill="#2563eb"`, `fill="#f59e0b"`, `stroke="#b91c1c"`} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("no %s in the SVG", want)
		}
	}
}

// TestSVGInChromium opens a drawing in headless Chromium and checks that
// it renders as an SVG document with the marked step on it.
func TestSVGInChromium(t *testing.T) {
	bin := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		redistest.Skip(t, redistest.NeedBrowser, "chromium not on PATH")
	}
	path := filepath.Join(t.TempDir(), "t.svg")
	var buf bytes.Buffer
	if err := sample(t).SVG(&buf); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1000, 800))
	defer cancelAlloc()
	cctx, cancelTab := chromedp.NewContext(actx)
	defer cancelTab()
	ctx, cancel := context.WithTimeout(cctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+path)); err != nil {
		t.Fatal(err)
	}
	ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.tagName === "svg" &&
		document.getElementsByTagName("parsererror").length === 0 &&
		document.documentElement.getBBox().height > 100 &&
		[...document.querySelectorAll("text")].some((t) => t.textContent.includes("commits after its lease"))`))
	if err != nil || !ok {
		t.Fatalf("the SVG did not render as expected: %v", err)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(90))
	if err != nil || len(shot) == 0 {
		t.Fatalf("screenshot: %v", err)
	}
}
