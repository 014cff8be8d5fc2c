//go:build browser

package server

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// findBrowser returns a Chromium or Chrome on PATH, or "".
func findBrowser() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// artifactDir is where screenshots go: $IDALLOC_TEST_ARTIFACTS, kept after
// the run, else the test's temporary directory.
func artifactDir(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv("IDALLOC_TEST_ARTIFACTS")
	if dir == "" {
		return tb.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatalf("IDALLOC_TEST_ARTIFACTS: %v", err)
	}
	return dir
}

// startBrowser starts a headless browser that lives until ctx ends or the
// test's cleanup, whichever comes first; cancelling the allocator ends the
// process. The flags keep it off the network: this test's machines refuse
// outside connections, and a browser that tries them stalls.
func startBrowser(t *testing.T, ctx context.Context, exe string) context.Context {
	t.Helper()
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 800),
	)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
	})
	// The first Run starts the browser; its context must outlive every tab.
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start %s: %v", exe, err)
	}
	return bctx
}

// tab is one browser tab on the page under test, with the errors its
// console and scripts reported.
type tab struct {
	t   *testing.T
	ctx context.Context
	mu  sync.Mutex
	// problems are uncaught exceptions and console errors, except the
	// network ones a test expects (a 401 before the token is given).
	problems []string
}

func newTab(t *testing.T, browser context.Context) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser)
	t.Cleanup(cancel)
	tb := &tab{t: t, ctx: ctx}
	if err := chromedp.Listen(ctx, tb.listen); err != nil {
		t.Fatalf("open tab: %v", err)
	}
	tb.run("enable console events", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := cdp.Call(ctx, tg, cdplog.Enable, cdp.Empty{}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, tg, runtime.Enable, cdp.Empty{})
		return err
	}))
	return tb
}

func (tb *tab) listen(ev any) {
	var msg string
	switch e := ev.(type) {
	case *runtime.EventExceptionThrown:
		msg = "exception: " + e.ExceptionDetails.Text
		if e.ExceptionDetails.Exception != nil {
			msg += " " + e.ExceptionDetails.Exception.Description
		}
	case *cdplog.EventEntryAdded:
		if e.Entry.Level != cdplog.EntryLevelError || e.Entry.Source == cdplog.EntrySourceNetwork {
			return
		}
		msg = fmt.Sprintf("console %s: %s (%s)", e.Entry.Source, e.Entry.Text, e.Entry.URL)
	default:
		return
	}
	tb.mu.Lock()
	tb.problems = append(tb.problems, msg)
	tb.mu.Unlock()
}

// checkConsole fails the test on any exception or console error so far:
// a script error or a CSP refusal would otherwise pass unseen.
func (tb *tab) checkConsole() {
	tb.t.Helper()
	tb.mu.Lock()
	defer tb.mu.Unlock()
	for _, p := range tb.problems {
		tb.t.Errorf("browser reported %s", p)
	}
}

// run runs actions, bounded, and fails the test with what the page's
// header says when they fail.
func (tb *tab) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		tb.t.Fatalf("%s: %v (page header: %q)", what, err, tb.header())
	}
}

// waitFor polls a JavaScript predicate until it holds, for at most 15s.
func (tb *tab) waitFor(what, predicate string) {
	tb.t.Helper()
	tb.run("wait for "+what, chromedp.Poll[chromedp.Void](predicate,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(15*time.Second)))
}

// eval returns a JavaScript expression's value as a string.
func (tb *tab) eval(expr string) string {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string]("String("+expr+")"))
	if err != nil {
		tb.t.Fatalf("eval %s: %v", expr, err)
	}
	return v
}

// header is the page's header bar as text, for failure messages.
func (tb *tab) header() string {
	ctx, cancel := context.WithTimeout(tb.ctx, 3*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector("header") || document.body || {}).innerText || ""`))
	if err != nil {
		return "unreadable: " + err.Error()
	}
	return strings.Join(strings.Fields(v), " ")
}

// screenshot saves the viewport at width×height (the whole page when
// full) as a PNG in dir and logs where.
func (tb *tab) screenshot(dir, name string, width, height int64, full bool) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 20*time.Second)
	defer cancel()
	opts := []chromedp.EmulateViewportOption{}
	if width < 600 {
		opts = append(opts, chromedp.EmulateMobile, chromedp.EmulateTouch)
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, height, opts...)); err != nil {
		tb.t.Fatalf("viewport %dx%d: %v", width, height, err)
	}
	// Let the page lay itself out at the new width and repaint.
	time.Sleep(300 * time.Millisecond)
	shot := chromedp.CaptureScreenshot()
	if full {
		shot = chromedp.FullScreenshot(100) // 100: PNG
	}
	png, err := chromedp.Run(ctx, shot)
	if err != nil {
		tb.t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		tb.t.Fatal(err)
	}
	tb.t.Logf("screenshot %s (%d bytes)", path, len(png))
}

// cellJS is the expression for the text of one cell of tag's row.
func cellJS(tag, class string) string {
	return fmt.Sprintf(`((document.querySelector('tr[data-tag=%q] .%s') || {}).textContent || "")`, tag, class)
}
