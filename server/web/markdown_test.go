package web_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// markdownCases are Markdown sources and the exact HTML that the page's
// renderer (static/markdown.js) builds for them, as the browser serializes
// its nodes. The last ones are hostile: HTML and script in a reply come out
// as text, and links with other schemes than http, https and mailto come
// out as plain spans.
var markdownCases = []struct{ name, src, want string }{
	{"emphasis", "Hello *world*, **bold**, ***both***, _under_ and ~~gone~~.",
		`<p>Hello <em>world</em>, <strong>bold</strong>, <strong><em>both</em></strong>, <em>under</em> and <del>gone</del>.</p>`},
	{"not emphasis", `\*escaped\* 2 * 3 * 4 snake_case_name **unclosed`,
		`<p>*escaped* 2 * 3 * 4 snake_case_name **unclosed</p>`},
	{"line breaks and paragraphs", "a\nb\n\nc", `<p>a<br>b</p><p>c</p>`},
	{"headings", "# One\n### Three ###\npara", `<h1>One</h1><h3>Three</h3><p>para</p>`},
	{"inline code", "use `a < b` and ``x ` y``", "<p>use <code>a &lt; b</code> and <code>x ` y</code></p>"},
	{"fenced code", "```go\nfmt.Println(\"<b>\")\n  indented\n```\nafter",
		`<div class="code"><div class="code-head"><span>go</span><button type="button" class="copy" aria-label="Copy go code">Copy</button></div>` +
			`<pre><code class="language-go">fmt.Println("&lt;b&gt;")` + "\n" + `  indented</code></pre></div><p>after</p>`},
	{"unclosed fence while streaming", "text\n~~~\nstill *code*",
		`<p>text</p><div class="code"><div class="code-head"><span>code</span><button type="button" class="copy" aria-label="Copy code">Copy</button></div>` +
			`<pre><code>still *code*</code></pre></div>`},
	{"nested lists", "- a\n- b\n  1. c\n  2. d\n- e\n\n3. x\n4. y",
		`<ul><li>a</li><li>b<ol><li>c</li><li>d</li></ol></li><li>e</li></ul><ol start="3"><li>x</li><li>y</li></ol>`},
	{"table", "| a | b |\n|:--|--:|\n| 1 | `|` |\n| **2** |",
		`<div class="table-wrap"><table><thead><tr><th class="align-left">a</th><th class="align-right">b</th></tr></thead>` +
			`<tbody><tr><td class="align-left">1</td><td class="align-right"><code>|</code></td></tr>` +
			`<tr><td class="align-left"><strong>2</strong></td><td class="align-right"></td></tr></tbody></table></div>`},
	{"quote and rule", "> quoted\n> more\n\n---", `<blockquote><p>quoted<br>more</p></blockquote><hr>`},
	{"links", "[site](https://example.com/a_(b) \"T\") <https://x.org> see https://y.org/p. [mail](mailto:a@b.c)",
		`<p><a href="https://example.com/a_(b)" rel="noopener noreferrer nofollow" target="_blank" title="T">site</a> ` +
			`<a href="https://x.org/" rel="noopener noreferrer nofollow" target="_blank">https://x.org</a> see ` +
			`<a href="https://y.org/p" rel="noopener noreferrer nofollow" target="_blank">https://y.org/p</a>. ` +
			`<a href="mailto:a@b.c" rel="noopener noreferrer nofollow" target="_blank">mail</a></p>`},
	{"image as a link", "![a cat](https://example.com/cat.png)",
		`<p><a href="https://example.com/cat.png" rel="noopener noreferrer nofollow" target="_blank">a cat</a></p>`},
	{"script", "<script>window.__pwned = 1</script>", `<p>&lt;script&gt;window.__pwned = 1&lt;/script&gt;</p>`},
	{"img onerror", `<img src=x onerror="window.__pwned = 2">`, `<p>&lt;img src=x onerror="window.__pwned = 2"&gt;</p>`},
	{"javascript links", "[click](javascript:window.__pwned=3) [x](JaVaScRiPt:alert(1)) <javascript:alert(1)> [d](data:text/html,hi) [rel](/api/tags)",
		`<p><span>click</span> <span>x</span> &lt;javascript:alert(1)&gt; <span>d</span> <span>rel</span></p>`},
	{"html in code and tables", "`<b onclick=x>`\n\n| <i>h</i> |\n|---|\n| <svg onload=alert(1)> |",
		`<p><code>&lt;b onclick=x&gt;</code></p><div class="table-wrap"><table><thead><tr><th>&lt;i&gt;h&lt;/i&gt;</th></tr></thead>` +
			`<tbody><tr><td>&lt;svg onload=alert(1)&gt;</td></tr></tbody></table></div>`},
	{"entities stay text", "&amp; &lt;b&gt;", `<p>&amp;amp; &amp;lt;b&amp;gt;</p>`},
}

// TestMarkdown renders markdownCases with the page's own module in
// chromium and compares the HTML it built; then it puts the hostile ones
// in the page and checks that nothing of them ran or became an element
// that could run (no script, img, iframe, svg, on* attribute or unsafe
// href).
func TestMarkdown(t *testing.T) {
	f := newFolio(t)
	p := newPage(t)
	p.open(f.URL + "/")
	srcs := map[string]string{}
	for _, c := range markdownCases {
		srcs[c.name] = c.src
	}
	js, _ := json.Marshal(srcs)
	got := eval[map[string]string](p, `(async () => {
		const { render } = await import("/ui/markdown.js");
		const out = {}, box = document.createElement("div");
		box.id = "md-test";
		document.body.append(box);
		for (const [name, src] of Object.entries(`+string(js)+`)) {
			const d = document.createElement("div");
			d.append(render(src));
			out[name] = d.innerHTML;
			box.append(render(src));
		}
		return out;
	})()`)
	for _, c := range markdownCases {
		if got[c.name] != c.want {
			t.Errorf("%s: %q renders\n%s\nwant\n%s", c.name, c.src, got[c.name], c.want)
		}
	}
	// an onerror would fire once the image failed to load: give it time
	p.do("a moment for anything that would run", chromedp.Sleep(200*time.Millisecond))
	bad := eval[[]string](p, `(() => {
		const box = document.getElementById("md-test"), bad = [];
		if (window.__pwned !== undefined) bad.push("window.__pwned = " + window.__pwned);
		for (const e of box.querySelectorAll("*")) {
			if (/^(script|img|iframe|svg|object|embed|style|link|form|input|video|audio|math)$/i.test(e.tagName)) bad.push("element " + e.tagName);
			for (const a of e.attributes) {
				if (/^on/i.test(a.name)) bad.push(e.tagName + " has " + a.name);
			}
			if (e.tagName === "A" && !/^(https?|mailto):/.test(e.getAttribute("href"))) bad.push("href " + e.getAttribute("href"));
		}
		return bad;
	})()`)
	for _, b := range bad {
		t.Errorf("a hostile reply is not inert: %s", b)
	}
}
