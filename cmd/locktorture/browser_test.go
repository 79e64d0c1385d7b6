package main

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locktorture/locktorture/matrix"

	"github.com/locktorture/locktorture/internal/testenv"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/locktorture/locktorture/reports"
)

// chromiumPath is Debian's chromium (make deps installs it).
const chromiumPath = "/usr/bin/chromium"

// pageCheck is what the browser saw of a page.
type pageCheck struct {
	Title  string   `json:"title"`
	Text   string   `json:"text"`
	Images int      `json:"images"`
	Broken []string `json:"broken"`
	Runs   []string `json:"runs"` // the matrix grid's links to runs
	Width  int      `json:"width"`
	// Requests are the URLs the page asked for.
	Requests []string `json:"-"`
}

// inspect is evaluated in the page once every image has loaded or failed.
const inspect = `(async () => {
  await Promise.all(Array.from(document.images).map(i => i.complete ? null :
    new Promise(r => { i.addEventListener('load', r); i.addEventListener('error', r); })));
  return {
    title: document.title,
    text: document.body.innerText,
    images: document.images.length,
    broken: Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src),
    runs: Array.from(document.querySelectorAll('a.run')).map(a => a.href),
    width: document.documentElement.scrollWidth,
  };
})()`

// openInChromium loads a file in real headless Chromium and reports what
// rendered. It skips the test when Chromium is not installed.
func openInChromium(t *testing.T, file string) pageCheck {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		testenv.Missing(t, "headless Chromium ("+chromiumPath+")")
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		t.Fatal(err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1280, 1000),
	}
	// The deadline only keeps a wedged browser from hanging the test run.
	base, stop := context.WithTimeout(context.Background(), 3*time.Minute)
	defer stop()
	actx, cancelAlloc := chromedp.NewExecAllocator(base, opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()

	var mu sync.Mutex
	var requests []string
	if err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok && e.Request != nil {
			mu.Lock()
			requests = append(requests, e.Request.URL)
			mu.Unlock()
		}
	}); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	u := (&url.URL{Scheme: "file", Path: abs}).String()
	if err := chromedp.Do(ctx, chromedp.Navigate(u)); err != nil {
		t.Fatalf("open %s in chromium: %v", u, err)
	}
	pc, err := chromedp.Run(ctx, chromedp.Evaluate[pageCheck](inspect, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("inspect %s: %v", u, err)
	}
	if dir := os.Getenv("REPORTS_SAMPLE_DIR"); dir != "" {
		if shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
			os.WriteFile(filepath.Join(dir, "browser-"+filepath.Base(filepath.Dir(abs))+".png"), shot, 0o644)
		}
	}
	mu.Lock()
	pc.Requests = append([]string(nil), requests...)
	mu.Unlock()
	return pc
}

// checkRendered asserts a page rendered: a title, its text, at least
// minImages images, every one loaded and decoded, and no request that
// left the disk.
func checkRendered(t *testing.T, name string, pc pageCheck, minImages int, texts ...string) {
	t.Helper()
	if pc.Title == "" {
		t.Errorf("%s: no title: the page did not render", name)
	}
	if pc.Images < minImages {
		t.Errorf("%s: %d images, want at least %d", name, pc.Images, minImages)
	}
	if len(pc.Broken) > 0 {
		t.Errorf("%s: images that did not load: %v", name, pc.Broken)
	}
	for _, w := range texts {
		if !strings.Contains(pc.Text, w) {
			t.Errorf("%s: the rendered text lacks %q", name, w)
		}
	}
	for _, r := range pc.Requests {
		if !strings.HasPrefix(r, "file://") && !strings.HasPrefix(r, "data:") {
			t.Errorf("%s: the page asked the network for %s", name, r)
		}
	}
	if len(pc.Requests) < 1+minImages {
		t.Errorf("%s: saw %d requests, want the page and its %d images", name, len(pc.Requests), minImages)
	}
}

// TestReportsInBrowser runs a small matrix (baseline with the in-process
// mutex: no servers) and opens its matrix page and its run's page in
// headless Chromium: both render, every image loads, every cell link leads
// to a run page that exists, and nothing is fetched from the network.
func TestReportsInBrowser(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		testenv.Missing(t, "headless Chromium ("+chromiumPath+")")
	}
	store := t.TempDir()
	code, out, stderr := runCLI(t, "matrix", "--scenarios", "baseline", "--backends", "mutex", "--duration", "500ms", "--store", store, "--quiet")
	if code != exitValid {
		t.Fatalf("matrix exit %d\n%s\n%s", code, out, stderr)
	}
	mdir := filepath.Join(store, "matrix", "latest")
	m, err := matrix.Read(mdir)
	if err != nil {
		t.Fatal(err)
	}

	pc := openInChromium(t, filepath.Join(mdir, reports.FileIndex))
	checkRendered(t, "matrix page", pc, 1, "AS EXPECTED", "baseline", "mutex", "violations / 1,000 holds")
	if len(pc.Runs) != len(m.Cells) || len(pc.Runs) == 0 {
		t.Fatalf("matrix page links %d runs, want one per cell (%d)", len(pc.Runs), len(m.Cells))
	}
	for _, r := range pc.Runs {
		u, err := url.Parse(r)
		if err != nil || u.Scheme != "file" {
			t.Fatalf("cell link %q is not a file", r)
		}
		if _, err := os.Stat(u.Path); err != nil {
			t.Errorf("cell link leads nowhere: %v", err)
		}
	}

	// The run page the grid links to.
	u, _ := url.Parse(pc.Runs[0])
	run := openInChromium(t, u.Path)
	checkRendered(t, "run page", run, 3, "INVALID", "expected invalid", "Repeat this run", "locktorture run --scenario baseline --backend mutex --seed 1 --duration 500ms", "mutex: overlapping holds")
}
