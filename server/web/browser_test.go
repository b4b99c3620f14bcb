package web_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"folio/installer"
	"folio/installer/fakehub"
	"folio/internal/fixtures"
	"folio/runner"
	"folio/server"
	"folio/store"
)

// The browser tests drive the page in Debian's chromium, headless, through
// the DevTools protocol (github.com/chromedp/chromedp). Without chromium
// they are skipped, except under CI (CI=true), where they fail.

func needed(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// One browser serves every test of the package, each in its own tab.
var (
	browserOnce sync.Once
	browserCtx  context.Context
	browserErr  error
	stopBrowser = func() {}
)

func TestMain(m *testing.M) {
	code := m.Run()
	stopBrowser()
	os.Exit(code)
}

func startBrowser() {
	var path string
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		browserErr = errors.New("chromium is not on PATH: apt-get install -y chromium")
		return
	}
	// The machine's network is closed: nothing that phones home.
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path),
		chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.WindowSize(1280, 860))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		cancel()
		cancelAlloc()
		browserErr = fmt.Errorf("starting %s: %w", path, err)
		return
	}
	browserCtx = ctx
	stopBrowser = func() { cancel(); cancelAlloc() }
}

// page is a browser tab. It collects what the page's console reports:
// errors, warnings and exceptions from the page's scripts, and the
// browser's own errors (a failed load, a CSP violation); each test ends by
// checking there were none.
type page struct {
	t   *testing.T
	ctx context.Context

	mu       sync.Mutex
	problems []string // guarded by mu
}

func newPage(t *testing.T) *page {
	t.Helper()
	browserOnce.Do(startBrowser)
	if browserErr != nil {
		needed(t, "%v", browserErr)
	}
	ctx, cancel := chromedp.NewContext(browserCtx)
	p := &page{t: t, ctx: ctx}
	messages := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleWarning || m.IsException() {
				p.mu.Lock()
				p.problems = append(p.problems, fmt.Sprintf("%s (%s:%d)", m, m.URL, m.Line+1))
				p.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		p.checkConsole()
		cancel()
		<-done
	})
	return p
}

// checkConsole fails the test for each problem the console reported.
func (p *page) checkConsole() {
	p.t.Helper()
	chromedp.Do(p.ctx, chromedp.Sleep(50*time.Millisecond)) // the last events arrive
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range p.problems {
		p.t.Errorf("the page's console: %s", m)
	}
	p.problems = nil
}

// do runs actions in the tab, failing the test on an error.
func (p *page) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		p.t.Fatalf("%s: %v\n%s", what, err, p.state())
	}
}

// eval evaluates js (awaiting a promise it returns) and decodes its value.
func eval[T any](p *page, js string) T {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, time.Minute)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		p.t.Fatalf("evaluating %s: %v\n%s", js, err, p.state())
	}
	return v
}

// waitFor waits until the expression js is truthy, within limit (a bound
// for something that otherwise never happens, not a timing claim).
func (p *page) waitFor(what, js string, limit time.Duration) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, limit+5*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingTimeout(limit),
		chromedp.WithPollingInterval(20*time.Millisecond))); err != nil {
		p.t.Fatalf("waiting for %s (%s): %v\n%s", what, js, err, p.state())
	}
}

// enter presses Enter (with modifiers, a chromedp.Modifier bit field) as
// a keyboard does: one keyDown that carries its text, whose default (a new
// line) the page may prevent, then keyUp. (chromedp.KeyEvent sends the
// text as a separate "char" event, which types the new line even after the
// page prevented the keyDown.)
func (p *page) enter(modifiers int64) {
	p.t.Helper()
	down := input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyDown, Key: "Enter", Code: "Enter",
		WindowsVirtualKeyCode: 13, NativeVirtualKeyCode: 13, Text: "\r", UnmodifiedText: "\r", Modifiers: modifiers}
	up := down
	up.Type, up.Text, up.UnmodifiedText = input.DispatchKeyEventTypeKeyUp, "", ""
	for _, ev := range []input.DispatchKeyEventParams{down, up} {
		if _, err := chromedp.Call(p.ctx, input.DispatchKeyEvent, ev); err != nil {
			p.t.Fatalf("pressing Enter: %v", err)
		}
	}
}

// state is what the page shows, for a failure's message.
func (p *page) state() string {
	ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`[
		"url: " + location.href,
		"alert: " + (document.getElementById("alert")?.hidden ? "" : document.getElementById("alert")?.textContent),
		"title: " + document.getElementById("title")?.textContent,
		"list: " + [...document.querySelectorAll(".conv-title")].map(e => e.textContent).join(" | "),
		"stop button: " + (document.getElementById("stop")?.hidden ? "hidden" : "shown"),
		"pull: " + document.getElementById("pull-status")?.textContent + " (bar " + document.getElementById("pull-progress")?.value + ")",
		"messages: " + [...document.querySelectorAll(".msg")].map(e => e.className + " [id " + e.dataset.id + ", busy " +
			e.getAttribute("aria-busy") + "]: " + e.querySelector(".msg-body")?.textContent.slice(0, 80) + " … " +
			(e.querySelector(".msg-notes")?.textContent || "")).join("\n  "),
	].join("\n")`))
	if err != nil {
		return "(the page's state is unreadable: " + err.Error() + ")"
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.problems) > 0 {
		s += "\nconsole:\n  " + strings.Join(p.problems, "\n  ")
	}
	return s
}

// open loads the page at url and waits until it has drawn its models and
// conversations.
func (p *page) open(url string) {
	p.t.Helper()
	p.do("loading "+url, chromedp.Navigate(url))
	p.waitFor("the page to start", `document.body.dataset.ready === "true"`, 20*time.Second)
}

// folio is a server with stories260K in its library, a FOLIO_HOME of its
// own (conversations, pulled models, the persisted prefix K/V), and the
// installer on, as folio serve runs. restart stops it and serves the same
// home again.
type folio struct {
	t         *testing.T
	lib, home string
	URL       string
	st        *store.Registry // folio.db, open while the server runs
	stop      func()
	pace      atomic.Int64 // a time.Duration: see paced
}

func newFolio(t *testing.T) *folio {
	t.Helper()
	f := &folio{t: t, lib: t.TempDir(), home: t.TempDir()}
	data, err := os.ReadFile(fixtures.Model(t, "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.lib, "stories260K.gguf"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	f.start()
	t.Cleanup(func() { f.stop() })
	return f
}

func (f *folio) start() {
	t := f.t
	t.Helper()
	st, err := store.OpenRegistry(f.home, store.RegistryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kv, err := store.OpenKV(f.home, store.KVOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reg := server.NewLibraryRegistry(nil)
	reg.Dirs, reg.Store = []string{f.lib}, st
	srv := server.New(server.Config{Registry: reg, Store: kv, Conversations: st, Version: "test",
		Load: runner.LoadOptions{NumCtx: 4096},
		Install: &installer.Options{Home: f.home, Store: st, MinPartSize: 256 << 10, RetryBase: time.Millisecond,
			ProgressEvery: 5 * time.Millisecond}})
	hs := httptest.NewServer(f.paced(srv))
	f.URL, f.st = hs.URL, st
	f.stop = func() { hs.Close(); srv.Close(); kv.Close(); st.Close() }
}

// paced sends a conversation's reply no faster than a line every f.pace,
// as to a slow reader: stories260K on a fast machine fills its context
// before a click on Stop arrives, and a test that stops a reply would find
// it finished.
func (f *folio) paced(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d := time.Duration(f.pace.Load()); d > 0 && strings.HasSuffix(r.URL.Path, "/chat") {
			w = pacedWriter{w, d}
		}
		h.ServeHTTP(w, r)
	})
}

type pacedWriter struct {
	http.ResponseWriter
	pace time.Duration
}

func (w pacedWriter) Write(b []byte) (int, error) {
	time.Sleep(w.pace)
	return w.ResponseWriter.Write(b)
}

func (w pacedWriter) Flush() { w.ResponseWriter.(http.Flusher).Flush() }

func (w pacedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (f *folio) restart() {
	f.t.Helper()
	f.stop()
	f.start()
}

// newHub is a fake registry serving a tiny model as library/tiny:latest.
func newHub(t *testing.T) (*fakehub.Hub, []byte) {
	t.Helper()
	hub := fakehub.New()
	t.Cleanup(hub.Close)
	data, err := os.ReadFile(fixtures.Model(t, "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	hub.Publish("library", "tiny", "latest", fakehub.Layer{MediaType: installer.MediaModel, Data: data})
	return hub, data
}
