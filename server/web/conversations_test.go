package web_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// lastReplyID waits for the reply in progress to end and returns the id
// the server gave it.
func (p *page) lastReplyID(what string) string {
	p.t.Helper()
	p.waitFor(what, replyDone+` && document.querySelector(".msg.assistant:last-child[data-id] .stats")`, 60*time.Second)
	return eval[string](p, `document.querySelector(".msg.assistant:last-child").dataset.id`)
}

// listed is the titles of the conversation list, top to bottom.
func (p *page) listed() []string {
	return eval[[]string](p, `[...document.querySelectorAll(".conv .conv-title")].map(e => e.textContent)`)
}

// TestEditRegenerateAndList: Regenerate replaces the last reply; Edit
// rewrites a user message, drops what followed and replies again; the
// conversation list finds by title, renames and deletes, each change
// reaching the server.
func TestEditRegenerateAndList(t *testing.T) {
	f := newFolio(t)
	p := newPage(t)
	p.open(f.URL + "/")
	p.pickModel("stories260K:latest")
	p.do("a short context", chromedp.Click(chromedp.CSS("#open-settings")), chromedp.SendKeys(chromedp.CSS("#num_ctx"), "160"))
	p.send("Once upon a time")
	first := p.lastReplyID("the first reply")
	id := eval[string](p, `decodeURIComponent(location.hash.slice(3))`)

	p.do("Regenerate", chromedp.Click(chromedp.CSS(".msg.assistant:last-child button.regenerate")))
	p.waitFor("a new reply", fmt.Sprintf(`document.querySelector(".msg.assistant:last-child")?.dataset.id !== %q`, first), 10*time.Second)
	second := p.lastReplyID("the regenerated reply")
	c := f.conversation(id)
	if len(c.Messages) != 2 || c.Messages[1].ID != second || second == first {
		t.Errorf("after Regenerate (reply %s, was %s) the server has %+v", second, first, c.Messages)
	}

	p.do("Edit", chromedp.Click(chromedp.CSS(".msg.user button.edit")))
	eval[bool](p, `(() => { document.querySelector(".msg.user .edit-box textarea").value = ""; return true })()`)
	p.do("the edited text", chromedp.SendKeys(chromedp.CSS(".msg.user .edit-box textarea"), "The cat sat"))
	p.enter(0)
	third := p.lastReplyID("the reply to the edit")
	c = f.conversation(id)
	if len(c.Messages) != 2 || c.Messages[0].Content != "The cat sat" || c.Messages[1].ID != third || third == second {
		t.Errorf("after Edit the server has %+v", c.Messages)
	}
	if shown := eval[string](p, `document.querySelector(".msg.user .msg-body").textContent`); shown != "The cat sat" {
		t.Errorf("after Edit the page shows the user message as %q", shown)
	}

	p.do("New chat", chromedp.Click(chromedp.CSS("#new-chat")))
	p.waitFor("an empty chat", `document.querySelectorAll(".msg").length === 0 && document.getElementById("title").textContent === "New chat"`, 5*time.Second)
	p.send("Tom had a dog")
	p.lastReplyID("the second conversation's reply")
	other := eval[string](p, `decodeURIComponent(location.hash.slice(3))`)
	p.waitFor("two conversations listed", `document.querySelectorAll(".conv").length === 2`, 5*time.Second)
	if got := p.listed(); fmt.Sprint(got) != "[Tom had a dog Once upon a time]" {
		t.Errorf("the list shows %q, want the newest first", got)
	}

	p.do("search", chromedp.SendKeys(chromedp.CSS("#search"), "DOG"))
	p.waitFor("the search to narrow the list", `document.querySelectorAll(".conv").length === 1`, 5*time.Second)
	if got := p.listed(); fmt.Sprint(got) != "[Tom had a dog]" {
		t.Errorf("searching DOG lists %q", got)
	}
	p.do("a search that finds nothing", chromedp.SendKeys(chromedp.CSS("#search"), "zzz"))
	p.waitFor("no match", `document.querySelectorAll(".conv").length === 0 && !document.getElementById("no-conversations").hidden`, 5*time.Second)
	eval[bool](p, `(() => { document.getElementById("search").value = ""; return true })()`)
	p.do("clear the search", chromedp.SendKeys(chromedp.CSS("#search"), " "+kb.Backspace))
	p.waitFor("the whole list", `document.querySelectorAll(".conv").length === 2`, 5*time.Second)

	p.do("Rename", chromedp.Click(chromedp.CSS(fmt.Sprintf(`.conv[data-id=%q] button.rename`, id))))
	p.do("the new title", chromedp.SendKeys(chromedp.CSS(".conv input"), "Cat story"))
	p.enter(0)
	p.waitFor("the renamed conversation", `[...document.querySelectorAll(".conv-title")].some(e => e.textContent === "Cat story")`, 5*time.Second)
	if c := f.conversation(id); c.Title != "Cat story" {
		t.Errorf("after Rename the server's title is %q", c.Title)
	}

	del := chromedp.CSS(fmt.Sprintf(`.conv[data-id=%q] button.delete`, other))
	p.do("Delete, once", chromedp.Click(del))
	if n := eval[int](p, `document.querySelectorAll(".conv").length`); n != 2 {
		t.Errorf("one click on Delete removed a conversation (%d left); it should ask first", n)
	}
	p.do("Delete, confirmed", chromedp.Click(del))
	p.waitFor("the deletion", `document.querySelectorAll(".conv").length === 1 && document.getElementById("title").textContent === "New chat"`, 5*time.Second)
	var gone conversation
	if status := getJSON(t, f.URL+"/api/folio/conversations/"+other, &gone); status != http.StatusNotFound {
		t.Errorf("the deleted conversation answers %d", status)
	}
}
