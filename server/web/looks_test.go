package web_test

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"folio/store"
)

var screenshots = flag.Bool("screenshots", false, "write the page's screenshots to docs/web-{light,dark,narrow}.png")

// a11y lists what the page gets wrong for a reader: a control without a
// name, and text whose contrast with its background is under 4.5:1
// (WCAG AA), each as a line.
const a11y = `(() => {
	const bad = [];
	for (const e of document.querySelectorAll("input, select, textarea")) {
		if (!e.labels?.length && !e.getAttribute("aria-label")) bad.push("no label: " + e.outerHTML.slice(0, 80));
	}
	for (const e of document.querySelectorAll("button, a[href]")) {
		if (!(e.getAttribute("aria-label") || e.textContent).trim()) bad.push("no name: " + e.outerHTML.slice(0, 80));
	}
	const rgb = (s) => s.match(/[\d.]+/g).map(Number);
	const lum = ([r, g, b]) => {
		const c = [r, g, b].map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
		return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
	};
	const background = (e) => {
		for (; e; e = e.parentElement) {
			const c = rgb(getComputedStyle(e).backgroundColor);
			if (c.length < 4 || c[3] > 0) return c;
		}
		return rgb(getComputedStyle(document.body).backgroundColor);
	};
	const texts = ".title, .msg-head, .msg-body, .stats, .resumed, .badge, .conv-title, .conv-meta, .muted, button, label, th, td, .empty p, .brand";
	let checked = 0;
	for (const e of document.querySelectorAll(texts)) {
		if (!e.getClientRects().length || !e.textContent.trim() || e.closest("[hidden], dialog:not([open])")) continue;
		const fg = lum(rgb(getComputedStyle(e).color)), bg = lum(background(e));
		const ratio = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
		if (ratio < 4.5) bad.push("contrast " + ratio.toFixed(2) + ": " + e.className + " " + e.textContent.trim().slice(0, 30));
		checked++;
	}
	if (checked < 20) bad.push("only " + checked + " texts checked");
	return bad;
})()`

// TestLooksInBrowser: light and dark follow prefers-color-scheme; in both,
// every control has a name and text has a contrast of 4.5:1 or more; the
// keyboard focus is outlined; at 360 px nothing overflows sideways and the
// conversation list is a drawer; at 1920 px the chat keeps a readable
// width. With -screenshots (go test ./server/web -run TestLooks -args
// -screenshots) it writes docs/web-light.png, web-dark.png and
// web-narrow.png.
func TestLooksInBrowser(t *testing.T) {
	f := newFolio(t)
	for _, title := range []string{"The fox and the crow", "A walk in the park"} {
		if _, err := f.st.CreateConversation(store.Conversation{Title: title, Model: "stories260K:latest"}); err != nil {
			t.Fatal(err)
		}
	}
	p := newPage(t)
	p.do("a desktop window", chromedp.EmulateViewport(1280, 820))
	p.open(f.URL + "/")
	p.pickModel("stories260K:latest")
	p.do("a system prompt and a shorter context", chromedp.Click(chromedp.CSS("#open-settings")),
		chromedp.SendKeys(chromedp.CSS("#system"), "You tell short stories for children, about animals, friends and the things they find."),
		chromedp.SendKeys(chromedp.CSS("#num_ctx"), "400"), chromedp.Click(chromedp.CSS("#open-settings")))
	f.pace.Store(int64(5 * time.Millisecond)) // a reply still streaming when Stop is pressed
	eval[bool](p, watchStream)
	p.send("Once upon a time, a little fox")
	p.waitFor("some of the reply", `window.__seen.at(-1) > 150`, 30*time.Second)
	p.do("Stop", chromedp.Click(chromedp.CSS("#stop")))
	p.waitFor("the stopped reply, saved", replyDone+` && document.querySelector(".msg.assistant[data-id] .badge.stopped")`, 20*time.Second)
	f.pace.Store(0)
	p.send("What did the fox find?")
	p.lastReplyID("the second reply")

	shot := func(name string) {
		if !*screenshots {
			return
		}
		png, err := chromedp.Run(p.ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("..", "..", "docs", name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	scheme := func(s string) {
		if _, err := chromedp.Call(p.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: s}}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ scheme, background, file string }{
		{"light", "rgb(255, 255, 255)", "web-light.png"},
		{"dark", "rgb(20, 22, 26)", "web-dark.png"},
	} {
		scheme(c.scheme)
		if bg := eval[string](p, `getComputedStyle(document.body).backgroundColor`); bg != c.background {
			t.Errorf("%s: the page's background is %s, want %s", c.scheme, bg, c.background)
		}
		for _, b := range eval[[]string](p, a11y) {
			t.Errorf("%s: %s", c.scheme, b)
		}
		shot(c.file)
	}
	scheme("light")

	p.do("Tab to the first control", chromedp.Click(chromedp.CSS("#title")), chromedp.KeyEvent(kb.Tab))
	if o := eval[string](p, `document.activeElement.id + ": " + getComputedStyle(document.activeElement).outlineStyle`); o != "model: solid" {
		t.Errorf("after Tab, the focus and its outline: %q, want the model picker outlined", o)
	}

	p.do("a phone", chromedp.EmulateViewport(360, 740, chromedp.EmulateMobile))
	p.waitFor("the narrow layout, the list off screen", `getComputedStyle(document.getElementById("toggle-sidebar")).display !== "none" &&
		document.getElementById("sidebar").getBoundingClientRect().right <= 0`, 5*time.Second)
	narrow := eval[map[string]any](p, `({
		overflow: document.documentElement.scrollWidth > 360,
		listInert: document.getElementById("sidebar").inert,
	})`)
	if narrow["overflow"] != false || narrow["listInert"] != true {
		t.Errorf("at 360 px: %v; want no sideways overflow and the hidden list inert", narrow)
	}
	for _, b := range eval[[]string](p, a11y) {
		t.Errorf("360 px: %s", b)
	}
	shot("web-narrow.png")
	p.do("open the list", chromedp.Click(chromedp.CSS("#toggle-sidebar")))
	p.waitFor("the list on screen", `document.getElementById("sidebar").getBoundingClientRect().left >= 0 && !document.getElementById("sidebar").inert`, 5*time.Second)
	p.do("Esc closes it", chromedp.KeyEvent(kb.Escape))
	p.waitFor("the list closed", `document.getElementById("toggle-sidebar").getAttribute("aria-expanded") === "false"`, 5*time.Second)

	p.do("a wide screen", chromedp.EmulateViewport(1920, 1080))
	wide := eval[map[string]float64](p, `({
		overflow: document.documentElement.scrollWidth - 1920,
		column: document.querySelector(".messages").getBoundingClientRect().width,
	})`)
	if wide["overflow"] > 0 || wide["column"] > 800 {
		t.Errorf("at 1920 px: %v; want no overflow and a column of at most 800 px", wide)
	}
}
