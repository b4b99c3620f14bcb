package web_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"folio/models/gguf"
	"folio/models/synth"
	"folio/store"
)

// hostileReply is a reply with a little of everything the renderer
// draws, and what a model (or a prompt injection) could put in a reply to
// run script in the page.
const hostileReply = "## Steps\n\n1. Build it:\n\n```sh\ngo build -o folio . && ./folio serve\n```\n\n" +
	"| flag | meaning |\n|---|---|\n| `-o` | output |\n\n" +
	"<script>window.__pwned = 'script'</script>\n\n<img src=x onerror=\"window.__pwned = 'img'\">\n\n" +
	"[click me](javascript:window.__pwned='link') and <iframe src=\"javascript:window.__pwned='frame'\"></iframe>"

// TestReplyInBrowser: a saved reply with thinking, Markdown and hostile
// HTML, reopened in the page: the thinking is apart and collapsed, the
// Markdown is drawn, nothing of the HTML runs or becomes an element, and
// a code block's Copy button puts its code on the clipboard.
func TestReplyInBrowser(t *testing.T) {
	f := newFolio(t)
	c, err := f.st.CreateConversation(store.Conversation{Title: "Rendering", Model: "stories260K:latest"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.AddMessage(c.ID, store.Message{Role: "user", Content: "<b>How</b> do I build it?"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.AddMessage(c.ID, store.Message{Role: "assistant", Content: hostileReply, Thinking: "The user wants the build <i>command</i>.",
		Stats: &store.ReplyStats{PromptTokens: 40, CachedTokens: 32, EvalTokens: 60, EvalDuration: 2 * time.Second}}); err != nil {
		t.Fatal(err)
	}
	p := newPage(t)
	if _, err := chromedp.CallBrowser(p.ctx, browser.SetPermission, browser.SetPermissionParams{
		Permission: &browser.PermissionDescriptor{Name: "clipboard-read"}, Setting: browser.PermissionSettingGranted, Origin: f.URL}); err != nil {
		t.Fatal(err)
	}
	p.open(f.URL + "/#c/" + c.ID)
	p.waitFor("the conversation", `document.querySelectorAll(".msg").length === 2`, 10*time.Second)
	p.do("a moment for anything that would run", chromedp.Sleep(200*time.Millisecond))

	got := eval[map[string]any](p, `(() => {
		const r = document.querySelector(".msg.assistant"), bad = [];
		for (const e of document.querySelectorAll(".msg *")) {
			if (/^(script|img|iframe|svg|object|embed)$/i.test(e.tagName)) bad.push(e.tagName);
			for (const a of e.attributes) if (/^on/i.test(a.name)) bad.push(a.name);
		}
		return {
			pwned: String(window.__pwned),
			bad,
			user: document.querySelector(".msg.user .msg-body").textContent,
			thinkingOpen: r.querySelector("details.thinking").open,
			thinkingHidden: r.querySelector("details.thinking").hidden,
			thinking: r.querySelector(".thinking-body").textContent,
			heading: r.querySelector(".msg-body h2")?.textContent,
			items: r.querySelectorAll(".msg-body ol > li").length,
			code: r.querySelector(".msg-body pre code.language-sh")?.textContent,
			cells: [...r.querySelectorAll(".msg-body td")].map(e => e.textContent).join("|"),
			links: r.querySelectorAll(".msg-body a").length,
			stats: r.querySelector(".stats").textContent,
		};
	})()`)
	want := map[string]any{
		"pwned": "undefined", "bad": []any{}, "user": "<b>How</b> do I build it?",
		"thinkingOpen": false, "thinkingHidden": false, "thinking": "The user wants the build <i>command</i>.",
		"heading": "Steps", "items": float64(1), "code": "go build -o folio . && ./folio serve", "cells": "-o|output", "links": float64(0),
		"stats": "30 tokens/s · 60 tokens · prompt 40 tokens · 32 of 40 prompt tokens from cache",
	}
	for k, w := range want {
		if g := got[k]; !equalJSON(g, w) {
			t.Errorf("%s: %#v, want %#v", k, g, w)
		}
	}

	p.do("open the thinking", chromedp.Click(chromedp.CSS(".msg.assistant details.thinking summary")))
	if open := eval[bool](p, `document.querySelector(".msg.assistant details.thinking").open`); !open {
		t.Error("a click on Thinking does not open it")
	}
	p.do("Copy", chromedp.Click(chromedp.CSS(".msg.assistant button.copy")))
	p.waitFor("Copied", `document.querySelector(".msg.assistant button.copy").textContent === "Copied"`, 5*time.Second)
	if clip := eval[string](p, `navigator.clipboard.readText()`); clip != "go build -o folio . && ./folio serve" {
		t.Errorf("the clipboard holds %q after Copy", clip)
	}
}

func equalJSON(a, b any) bool {
	if x, ok := a.([]any); ok {
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return a == b
}

// thinkTemplate opens a thought in the prompt, as DeepSeek-R1's does
// (unless enable_thinking is false, as Qwen3's), so that what the model
// writes is thinking until it closes it.
const thinkTemplate = `{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{{ '\n' }}{% endfor %}` +
	`{% if add_generation_prompt %}<|assistant|>{% if enable_thinking is defined and not enable_thinking %}` +
	`<think>{{ '\n\n' }}</think>{{ '\n\n' }}{% else %}<think>{{ '\n' }}{% endif %}{% endif %}`

// TestThinkingInBrowser: a thinking model's thoughts stream into the
// Thinking box, apart from the answer, open while they arrive and
// collapsed once the reply ends; the server saved them apart too.
func TestThinkingInBrowser(t *testing.T) {
	f := newFolio(t)
	m, err := synth.Tiny("qwen2", gguf.TypeQ8_0, 3)
	if err != nil {
		t.Fatal(err)
	}
	w := m.Writer()
	w.Set("tokenizer.chat_template", thinkTemplate)
	if err := w.WriteFile(filepath.Join(f.lib, "tiny-think.gguf")); err != nil {
		t.Fatal(err)
	}
	p := newPage(t)
	p.open(f.URL + "/")
	p.pickModel("tiny-think:latest")
	// Greedy: this model's reply then runs to the end of num_ctx (~480
	// tokens, all thinking) and streams over many frames. The page draws at
	// animation frames; sampled at seed 7 it ended after 16 tokens, a few
	// milliseconds, and a frame fell within them only some of the time.
	p.do("a greedy reply in a short context", chromedp.Click(chromedp.CSS("#open-settings")),
		chromedp.SendKeys(chromedp.CSS("#num_ctx"), "512"), chromedp.SendKeys(chromedp.CSS("#temperature"), "0"))
	eval[bool](p, `(() => {
		window.__thinking = [];
		new MutationObserver(() => {
			const r = document.querySelector('.msg.assistant[aria-busy="true"]');
			if (r && r.querySelector(".thinking-body").textContent) window.__thinking.push(r.querySelector("details.thinking").open);
		}).observe(document.getElementById("messages"), { subtree: true, childList: true, characterData: true });
		return true;
	})()`)
	p.send("Why is the sky blue?")
	id := p.lastReplyID("the reply")
	c := f.conversation(eval[string](p, `decodeURIComponent(location.hash.slice(3))`))
	r := c.Messages[len(c.Messages)-1]
	if r.ID != id || r.Thinking == "" {
		t.Fatalf("the server saved the reply as %+v", r)
	}
	if len(r.Thinking) < 1000 {
		t.Fatalf("the reply thought %d bytes; the test needs a long one, to stream over many frames", len(r.Thinking))
	}
	got := eval[map[string]any](p, `(() => {
		const r = document.querySelector(".msg.assistant:last-child");
		return {
			thinking: r.querySelector(".thinking-body").textContent,
			open: r.querySelector("details.thinking").open,
			hidden: r.querySelector("details.thinking").hidden,
			openWhileStreaming: window.__thinking.length > 0 && window.__thinking.every(Boolean),
		};
	})()`)
	if got["thinking"] != r.Thinking || got["open"] != false || got["hidden"] != false || got["openWhileStreaming"] != true {
		t.Errorf("the Thinking box: %v; the server saved thinking %q", got, r.Thinking)
	}
	if body := eval[string](p, `document.querySelector(".msg.assistant:last-child .msg-body").textContent`); strings.Contains(body, r.Thinking) {
		t.Errorf("the thinking is in the answer too: %q", body)
	}
}
