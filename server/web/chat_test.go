package web_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"folio/models/gguf"
	"folio/models/synth"
	"folio/store"
)

// conversation is GET /api/folio/conversations/{id}'s answer.
type conversation struct {
	ID       string         `json:"id"`
	Title    string         `json:"title"`
	Model    string         `json:"model"`
	System   string         `json:"system"`
	Options  map[string]any `json:"options"`
	Messages []struct {
		ID       string `json:"id"`
		Role     string `json:"role"`
		Content  string `json:"content"`
		Thinking string `json:"thinking"`
		Stopped  bool   `json:"stopped"`
		Stats    *struct {
			PromptEvalCount     int `json:"prompt_eval_count"`
			PromptCachedCount   int `json:"prompt_cached_count"`
			PromptRestoredCount int `json:"prompt_restored_count"`
			EvalCount           int `json:"eval_count"`
		} `json:"stats"`
	} `json:"messages"`
}

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
	}
	return resp.StatusCode
}

func (f *folio) conversation(id string) conversation {
	f.t.Helper()
	var c conversation
	if status := getJSON(f.t, f.URL+"/api/folio/conversations/"+id, &c); status != http.StatusOK {
		f.t.Fatalf("GET conversation %s: %d", id, status)
	}
	return c
}

// pickModel chooses name in the page's model picker, as a user does.
func (p *page) pickModel(name string) {
	p.t.Helper()
	p.waitFor("the model "+name+" in the picker", fmt.Sprintf(`[...document.querySelectorAll("#model option")].some(o => o.value === %q)`, name), 10*time.Second)
	p.do("picking "+name, chromedp.Focus(chromedp.CSS("#model")))
	eval[bool](p, fmt.Sprintf(`(() => { const s = document.getElementById("model"); s.value = %q; s.dispatchEvent(new Event("change")); return true })()`, name))
}

// send types text in the message box and presses Enter.
func (p *page) send(text string) {
	p.t.Helper()
	p.do("typing "+text, chromedp.SendKeys(chromedp.CSS("#composer-input"), text))
	p.enter(0)
}

// watchStream records, in window.__seen, each new length of the text of
// the reply that is arriving (aria-busy="true").
const watchStream = `(() => {
	window.__seen = [];
	new MutationObserver(() => {
		const r = document.querySelector('.msg.assistant[aria-busy="true"] .msg-body');
		const n = r ? r.textContent.length : 0;
		if (n > 0 && window.__seen[window.__seen.length - 1] !== n) window.__seen.push(n);
	}).observe(document.getElementById("messages"), { subtree: true, childList: true, characterData: true });
	return true;
})()`

const replyDone = `document.getElementById("stop").hidden && document.querySelector(".msg.assistant:last-child")?.getAttribute("aria-busy") === "false"`

// TestChatInBrowser: pick stories260k, set the conversation's system
// prompt and options, send a message with Enter and watch the reply
// stream in; stop it with Esc; reload and find the conversation listed and
// reopened with its stopped reply; restart the server on the same
// FOLIO_HOME, reopen the conversation and send a turn, whose reply says
// how many of its prompt tokens came from the cache (more than none: the
// prefix persisted on disk) and that the conversation was resumed.
func TestChatInBrowser(t *testing.T) {
	f := newFolio(t)
	p := newPage(t)
	p.open(f.URL + "/")
	p.pickModel("stories260K:latest")

	const system = "You are a storyteller. Tell short, happy stories about animals, children and their friends."
	p.do("the settings", chromedp.Click(chromedp.CSS("#open-settings")),
		chromedp.SendKeys(chromedp.CSS("#system"), system),
		chromedp.SendKeys(chromedp.CSS("#temperature"), "0.7"),
		chromedp.SendKeys(chromedp.CSS("#num_ctx"), "1024"),
		chromedp.SendKeys(chromedp.CSS("#seed"), "42"))

	// Shift+Enter is a new line, not a send
	p.do("typing", chromedp.SendKeys(chromedp.CSS("#composer-input"), "Once upon"))
	p.enter(int64(chromedp.ModifierShift))
	p.do("typing", chromedp.SendKeys(chromedp.CSS("#composer-input"), "a time"))
	if v := eval[string](p, `document.getElementById("composer-input").value`); v != "Once upon\na time" {
		t.Errorf("after Shift+Enter the message box holds %q, want a new line in it", v)
	}
	if n := eval[int](p, `document.querySelectorAll(".msg").length`); n != 0 {
		t.Errorf("Shift+Enter sent the message (%d messages shown)", n)
	}
	f.pace.Store(int64(5 * time.Millisecond)) // a reply still streaming when Stop is pressed
	eval[bool](p, watchStream)
	p.enter(0)

	// the reply streams in: its text grows, frame after frame
	p.waitFor("the reply to stream", `window.__seen.length >= 3`, 30*time.Second)
	p.do("Esc", chromedp.KeyEvent(kb.Escape))
	p.waitFor("the stopped reply, saved", replyDone+` && document.querySelector(".msg.assistant[data-id] .badge.stopped")`, 20*time.Second)
	f.pace.Store(0)
	seen := eval[[]int](p, `window.__seen`)
	if seen[len(seen)-1] <= seen[0] {
		t.Errorf("while it streamed, the reply's text did not grow: %v characters", seen)
	}
	id := eval[string](p, `decodeURIComponent(location.hash.slice(3))`)
	c := f.conversation(id)
	if len(c.Messages) != 2 || c.Messages[0].Content != "Once upon\na time" || !c.Messages[1].Stopped || c.Messages[1].Content == "" {
		t.Fatalf("after the stop the server has %+v", c.Messages)
	}
	shown := eval[string](p, `document.querySelector(".msg.assistant .msg-body").textContent`)
	if want := paragraphText(c.Messages[1].Content); shown != want {
		t.Errorf("the page shows the stopped reply as\n%q\nthe server saved\n%q", shown, want)
	}
	t.Logf("the reply grew through %d lengths (%v…) before Esc; %d characters saved, stopped", len(seen), seen[:3], len(c.Messages[1].Content))
	if c.System != system || c.Model != "stories260K:latest" || c.Title != "Once upon a time" {
		t.Errorf("the conversation is %q on %q with system %q", c.Title, c.Model, c.System)
	}
	if fmt.Sprint(c.Options) != "map[num_ctx:1024 seed:42 temperature:0.7]" {
		t.Errorf("the conversation's options are %v, want the settings typed", c.Options)
	}

	// a reload lists the conversation and reopens it
	p.do("reload", chromedp.Reload())
	p.waitFor("the page to start", `document.body.dataset.ready === "true"`, 20*time.Second)
	p.waitFor("the conversation listed and open", fmt.Sprintf(`document.querySelector('.conv.current[data-id=%q]') && document.querySelectorAll(".msg").length === 2 && document.querySelector(".msg.assistant .badge.stopped")`, id), 10*time.Second)

	// a restart on the same FOLIO_HOME: the conversation, reopened, resumes
	// from the persisted prefix
	f.restart()
	p.open(f.URL + "/#c/" + id)
	p.waitFor("the conversation reopened", `document.querySelectorAll(".msg").length === 2`, 10*time.Second)
	p.send("The end.")
	p.waitFor("the reply after the restart", replyDone+` && document.querySelector(".msg.assistant:last-child .stats")`, 60*time.Second)
	c = f.conversation(id)
	if len(c.Messages) != 4 || c.Messages[3].Stats == nil {
		t.Fatalf("after the restart the server has %+v", c.Messages)
	}
	st := c.Messages[3].Stats
	stats := eval[string](p, `document.querySelector(".msg.assistant:last-child .stats").textContent`)
	resumed := eval[string](p, `document.querySelector(".msg.assistant:last-child .resumed")?.textContent || ""`)
	want := fmt.Sprintf("%d of %d prompt tokens from cache (%d restored from disk)", st.PromptCachedCount, st.PromptEvalCount, st.PromptRestoredCount)
	if !strings.Contains(stats, want) || !strings.Contains(stats, "tokens/s") {
		t.Errorf("the reply's stats say %q, want %q and a speed", stats, want)
	}
	if st.PromptCachedCount == 0 || st.PromptRestoredCount == 0 ||
		!strings.Contains(resumed, fmt.Sprintf("%d prompt tokens of this conversation were restored from folio's cache (%d of them loaded from disk", st.PromptCachedCount, st.PromptRestoredCount)) {
		t.Errorf("the first reply after the restart: %d of %d prompt tokens from cache; the page says %q", st.PromptCachedCount, st.PromptEvalCount, resumed)
	}
	t.Logf("after the restart: %s; %s", stats, resumed)
}

// chatTemplate is a chat template with role markers: a reply's text
// renders back to the tokens that were generated, so a conversation's
// whole history can come from the prefix cache.
const chatTemplate = `{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{{ '\n' }}{% endfor %}` +
	`{% if add_generation_prompt %}<|assistant|>{% endif %}`

// postChat sends one turn of conversation id through the API and reads
// its stream to the end.
func (f *folio) postChat(id, content string) {
	f.t.Helper()
	body, _ := json.Marshal(map[string]string{"content": content})
	resp, err := http.Post(f.URL+"/api/folio/conversations/"+id+"/chat", "application/json", bytes.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !bytes.Contains(out, []byte(`"message_id"`)) {
		f.t.Fatalf("a turn of %s: %d %s", id, resp.StatusCode, out)
	}
}

// TestResume20TurnsInBrowser: a conversation of 20 turns, reopened in the
// page after a restart, answers its next message with 90% or more of the
// prompt from the cache (the prefix persisted in FOLIO_HOME), and the
// page says so under the reply.
func TestResume20TurnsInBrowser(t *testing.T) {
	f := newFolio(t)
	m, err := synth.Tiny("qwen2", gguf.TypeQ8_0, 3)
	if err != nil {
		t.Fatal(err)
	}
	w := m.Writer()
	w.Set("tokenizer.chat_template", chatTemplate)
	if err := w.WriteFile(filepath.Join(f.lib, "tiny-chat.gguf")); err != nil {
		t.Fatal(err)
	}
	c, err := f.st.CreateConversation(store.Conversation{Title: "Twenty turns", Model: "tiny-chat:latest",
		System: "You answer questions about numbers.", Options: `{"temperature":0,"num_predict":8}`})
	if err != nil {
		t.Fatal(err)
	}
	for turn := 1; turn <= 20; turn++ {
		f.postChat(c.ID, fmt.Sprintf("Question %d: what comes after the number %d, and why?", turn, turn*7))
	}
	f.restart()
	p := newPage(t)
	p.open(f.URL + "/#c/" + c.ID)
	p.waitFor("the 40 messages", `document.querySelectorAll(".msg").length === 40`, 10*time.Second)
	p.send("Question 21: and after that one?")
	p.lastReplyID("turn 21")
	got := eval[map[string]float64](p, `(() => {
		const r = document.querySelector(".msg.assistant:last-child");
		return { prompt: +r.querySelector(".stats").dataset.prompt, cached: +r.querySelector(".stats").dataset.cached,
			restored: +r.querySelector(".stats").dataset.restored, resumed: +(r.querySelector(".resumed")?.dataset.cached ?? -1) };
	})()`)
	saved := f.conversation(c.ID).Messages[41].Stats
	if saved == nil || got["prompt"] != float64(saved.PromptEvalCount) || got["cached"] != float64(saved.PromptCachedCount) ||
		got["restored"] != float64(saved.PromptRestoredCount) || got["restored"] == 0 || got["resumed"] != got["cached"] {
		t.Fatalf("the page shows %v; the server saved %+v", got, saved)
	}
	ratio := got["cached"] / got["prompt"]
	if ratio < 0.9 {
		t.Errorf("turn 21 after the restart: %v of %v prompt tokens from cache (%.1f%%), want >= 90%%", got["cached"], got["prompt"], 100*ratio)
	}
	t.Logf("turn 21 after the restart, in the page: %v of %v prompt tokens from cache (%.1f%%)", got["cached"], got["prompt"], 100*ratio)
}

// paragraphText is what a reply of plain paragraphs reads as once the
// page's markdown has rendered it: each line trimmed (markdown drops a
// paragraph line's leading and trailing spaces; a reply stopped right
// after a token that ends in a space ends in one) and the lines run
// together, as textContent joins them.
func paragraphText(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	return strings.Join(lines, "")
}
