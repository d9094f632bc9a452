package chaos

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Viewports of the screenshots: a laptop and a phone.
const (
	desktopWidth, desktopHeight = 1280, 900
	phoneWidth, phoneHeight     = 390, 844
)

// findBrowser returns the Chromium (or Chrome) to drive: $SCHEDULER_BROWSER,
// else /usr/bin/chromium, else the first of chromium, chromium-browser and
// google-chrome found in PATH; "" when there is none.
func findBrowser() string {
	if p := os.Getenv("SCHEDULER_BROWSER"); p != "" {
		return p
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// browser is one headless Chromium process, shared by the tests of a file:
// each tab it opens has a browser context of its own (its own cookies), so
// tests sharing it do not see each other's sessions.
type browser struct {
	ctx  context.Context // the browser's first tab; parent of every other
	shot string          // folder of the screenshots
}

// newBrowser starts a headless Chromium for t and stops it in t's cleanup.
// Without a browser the test skips, saying what to install, unless
// SCHEDULER_REQUIRE_BROWSER=1 (as .ci/run sets), when it fails.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	path := findBrowser()
	if path == "" {
		msg := "no browser: install Chromium (apt-get install -y chromium) or set SCHEDULER_BROWSER to a Chromium or Chrome binary"
		if os.Getenv("SCHEDULER_REQUIRE_BROWSER") == "1" {
			t.Fatal(msg + " (SCHEDULER_REQUIRE_BROWSER=1)")
		}
		t.Skip(msg)
	}
	// --no-sandbox: the tests may run as root, where Chromium's sandbox
	// refuses to start. The other flags keep it from reaching hosts it
	// cannot reach from a test machine (updates, sync, field trials).
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.NoFirstRun,
		chromedp.WindowSize(desktopWidth, desktopHeight),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	start := time.Now()
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("start %s: %v", path, err)
	}
	t.Logf("browser %s started in %v", path, time.Since(start).Round(time.Millisecond))
	// The screenshots go to $SCHEDULER_SCREENSHOTS, else to a folder that
	// lives as long as the browser.
	shot := os.Getenv("SCHEDULER_SCREENSHOTS")
	if shot == "" {
		shot = filepath.Join(t.TempDir(), "screenshots")
	}
	if err := os.MkdirAll(shot, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s (set SCHEDULER_SCREENSHOTS to keep them)", shot)
	return &browser{ctx: ctx, shot: shot}
}

// tab is one browser tab on the dashboard of a daemon. It records what a
// person would see go wrong: console errors, uncaught exceptions, browser
// log errors (a Content-Security-Policy violation is one) and page assets
// that failed to load or answered an error status.
type tab struct {
	t    testing.TB
	ctx  context.Context
	base string // http://host:port of the dashboard
	shot string // folder of the screenshots

	mu       sync.Mutex
	urls     map[network.RequestID]string
	docs     map[string]bool // URLs loaded as pages, whose status the test checks
	problems []string
}

// open opens a tab with a browser context of its own on the dashboard at
// base, closed in t's cleanup.
func (b *browser) open(t testing.TB, base string) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	p := &tab{t: t, ctx: ctx, base: base, shot: b.shot, urls: map[network.RequestID]string{}, docs: map[string]bool{}}
	if err := chromedp.Listen(ctx, p.event); err != nil {
		t.Fatalf("listen to the tab: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(desktopWidth, desktopHeight)); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	return p
}

// event records a problem the page shows. It runs on the browser's read
// loop, so it only appends.
func (p *tab) event(ev any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			var args []string
			for _, a := range ev.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			p.problems = append(p.problems, fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(args, " ")))
		}
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		text := d.Text
		if d.Exception != nil {
			text += " " + d.Exception.Description
		}
		p.problems = append(p.problems, fmt.Sprintf("uncaught exception at %s:%d: %s", d.URL, d.LineNumber+1, text))
	case *log.EventEntryAdded:
		// A page answering an error status (a refused login, a forged
		// form) is logged too; the test checks that status itself.
		if e := ev.Entry; e.Level == log.EntryLevelError && !(e.Source == log.EntrySourceNetwork && p.docs[e.URL]) {
			p.problems = append(p.problems, fmt.Sprintf("browser log (%s): %s %s", e.Source, e.Text, e.URL))
		}
	case *network.EventRequestWillBeSent:
		p.urls[ev.RequestID] = ev.Request.URL
		if ev.Type == network.ResourceTypeDocument {
			p.docs[ev.Request.URL] = true
		}
	case *network.EventLoadingFailed:
		if !ev.Canceled {
			p.problems = append(p.problems, fmt.Sprintf("%s %s failed to load: %s %s", ev.Type, p.urls[ev.RequestID], ev.ErrorText, ev.BlockedReason))
		}
	case *network.EventResponseReceived:
		// A page's own status is checked where it is loaded (an action's
		// 403 is a page too); an asset answering an error is a problem.
		if ev.Type != network.ResourceTypeDocument && ev.Response.Status >= 400 {
			p.problems = append(p.problems, fmt.Sprintf("%s %s answered %d", ev.Type, ev.Response.URL, ev.Response.Status))
		}
	}
}

// pageWait bounds each wait on the page (an element that never appears, a
// navigation that never ends); reaching it fails the test.
const pageWait = 30 * time.Second

// tabRun runs a on the tab within pageWait.
func tabRun[T any](p *tab, a chromedp.Action[T]) (T, error) {
	ctx, cancel := context.WithTimeout(p.ctx, pageWait)
	defer cancel()
	return chromedp.Run(ctx, a)
}

// do runs steps on the tab within pageWait.
func (p *tab) do(steps ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(p.ctx, pageWait)
	defer cancel()
	return chromedp.Do(ctx, steps...)
}

// clean fails the test with every problem recorded since the last call.
func (p *tab) clean(where string) {
	p.t.Helper()
	p.mu.Lock()
	problems := p.problems
	p.problems = nil
	p.mu.Unlock()
	for _, pr := range problems {
		p.t.Errorf("%s: %s", where, pr)
	}
}

// load navigates to path, fails the test unless the page answers 200 with
// a title and the nav of every page, and returns once it is loaded.
func (p *tab) load(path string) {
	p.t.Helper()
	resp, err := tabRun(p, chromedp.NavigateResponse(p.base+path))
	if err != nil {
		p.t.Fatalf("load %s: %v", path, err)
	}
	if resp.Status != http.StatusOK {
		p.t.Fatalf("load %s: status %d %s, want 200", path, resp.Status, resp.StatusText)
	}
	p.ready(path)
}

// ready checks what every page has: a title and a nav linking to the
// three lists, and no problem so far.
func (p *tab) ready(where string) {
	p.t.Helper()
	if err := p.do(chromedp.WaitReady(chromedp.CSS("nav"))); err != nil {
		p.t.Fatalf("%s: no nav: %v", where, err)
	}
	title := evalJS[string](p, `document.title`)
	if strings.TrimSpace(title) == "" {
		p.t.Errorf("%s: the page has no title", where)
	}
	links := evalJS[[]string](p, `Array.from(document.querySelectorAll('nav a')).map(a => a.getAttribute('href'))`)
	for _, want := range []string{"/", "/jobs", "/alarms"} {
		found := false
		for _, l := range links {
			found = found || l == want
		}
		if !found {
			p.t.Errorf("%s: nav links %v, want one to %s", where, links, want)
		}
	}
	p.clean(where)
}

// path is the path and query of the page shown.
func (p *tab) path() string {
	p.t.Helper()
	return evalJS[string](p, `location.pathname + location.search`)
}

// submit clicks the submit button of the form sel (a person's click, not a
// script's submit) and waits for the page it leads to; it returns that
// page's status.
func (p *tab) submit(sel string) int64 {
	p.t.Helper()
	return p.clickLink(sel + ` [type=submit]`)
}

// clickLink clicks the first visible element sel matches and returns the
// status of the page it leads to.
func (p *tab) clickLink(sel string) int64 {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, pageWait)
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
	if err != nil {
		p.t.Fatalf("click %s on %s: %v", sel, p.path(), err)
	}
	return resp.Status
}

// fill sets the form field sel (an input or a select) to value.
func (p *tab) fill(sel, value string) {
	p.t.Helper()
	if err := p.do(chromedp.SetValue(chromedp.CSS(sel), value, chromedp.NodeReady)); err != nil {
		p.t.Fatalf("fill %s on %s: %v", sel, p.path(), err)
	}
}

// text is the visible text of the first element sel matches, trimmed;
// the element must be on the page.
func (p *tab) text(sel string) string {
	p.t.Helper()
	v := evalJS[*string](p, fmt.Sprintf(`(e => e ? e.innerText : null)(document.querySelector(%q))`, sel))
	if v == nil {
		p.t.Errorf("%s: no %s", p.path(), sel)
		return ""
	}
	return strings.TrimSpace(*v)
}

// count is how many elements sel matches now.
func (p *tab) count(sel string) int {
	p.t.Helper()
	return evalJS[int](p, fmt.Sprintf(`document.querySelectorAll(%q).length`, sel))
}

// evalJS evaluates expr in the page and decodes its value.
func evalJS[T any](p *tab, expr string) T {
	p.t.Helper()
	v, err := tabRun(p, chromedp.Evaluate[T](expr))
	if err != nil {
		p.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// screenshots saves the page shown as name-desktop.png and name-phone.png
// in the screenshot folder, and checks that at phone width the page does
// not scroll sideways (a wide table scrolls in its own box).
func (p *tab) screenshots(name string) {
	p.t.Helper()
	for _, v := range []struct {
		suffix string
		w, h   int64
		opts   []chromedp.EmulateViewportOption
	}{
		{"phone", phoneWidth, phoneHeight, []chromedp.EmulateViewportOption{chromedp.EmulateScale(2), chromedp.EmulateMobile}},
		{"desktop", desktopWidth, desktopHeight, nil},
	} {
		if err := p.do(chromedp.EmulateViewport(v.w, v.h, v.opts...)); err != nil {
			p.t.Fatalf("viewport %dx%d: %v", v.w, v.h, err)
		}
		if v.suffix == "phone" {
			if w := evalJS[int](p, `document.documentElement.scrollWidth`); w > phoneWidth {
				p.t.Errorf("%s at %d px wide scrolls sideways: the page is %d px wide", p.path(), phoneWidth, w)
			}
		}
		png, err := tabRun(p, chromedp.CaptureScreenshot())
		if err != nil {
			p.t.Fatalf("screenshot of %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(p.shot, name+"-"+v.suffix+".png"), png, 0o644); err != nil {
			p.t.Fatal(err)
		}
	}
}
