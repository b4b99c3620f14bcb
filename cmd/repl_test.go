package cmd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/ollama/ollama/api"

	"folio/internal/fixtures"
	"folio/runner"
)

// scriptReader plays a chat's lines: "^C" is a Ctrl-C at the prompt. It
// writes the prompts to out, so that out reads as the terminal would.
type scriptReader struct {
	r      *bufio.Reader
	out    io.Writer
	onLine func(line string) // called with each line read
}

func (s *scriptReader) ReadLine(prompt string) (string, error) {
	io.WriteString(s.out, prompt)
	line, err := s.r.ReadString('\n')
	if err != nil && (line == "" || err != io.EOF) {
		return "", err
	}
	line = strings.TrimSuffix(line, "\n")
	io.WriteString(s.out, line+"\n") // the terminal's echo
	if s.onLine != nil {
		s.onLine(line)
	}
	if line == "^C" {
		return "", errInterrupt
	}
	return line, nil
}

// chatRecorder is an http.RoundTripper that keeps the chat requests sent
// and the context of the last one.
type chatRecorder struct {
	base  http.RoundTripper
	mu    sync.Mutex // guards chats and ctx
	chats []api.ChatRequest
	ctx   context.Context
}

func (c *chatRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Path == "/api/chat" {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		var chat api.ChatRequest
		if err := json.Unmarshal(body, &chat); err != nil {
			return nil, err
		}
		c.mu.Lock()
		c.chats = append(c.chats, chat)
		c.ctx = req.Context()
		c.mu.Unlock()
	}
	return c.base.RoundTrip(req)
}

func (c *chatRecorder) requests() []api.ChatRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]api.ChatRequest{}, c.chats...)
}

func (c *chatRecorder) lastCtx() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ctx
}

// localREPL is a chat with stories260K on a server of this process (as
// folio run starts one when none answers), its requests recorded.
func localREPL(t *testing.T, script string) (*repl, *chatRecorder, *bytes.Buffer, *scriptReader) {
	t.Helper()
	t.Setenv("FOLIO_MODELS_PATH", fixtures.Models(t))
	_, ls, err := startLocal("stories260k", runner.LoadOptions{NumCtx: 512})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ls.Close)
	rec := &chatRecorder{base: &http.Transport{DialContext: ls.ln.dial}}
	c := api.NewClient(&url.URL{Scheme: "http", Host: "folio.local"}, &http.Client{Transport: rec})
	var out bytes.Buffer
	in := &scriptReader{r: bufio.NewReader(strings.NewReader(script)), out: &out}
	return &repl{client: c, model: "stories260k", in: in, out: &out, interrupts: make(chan os.Signal, 1)}, rec, &out, in
}

// TestREPLScript: a chat of settings, prompts (one multi-line), /show,
// mistakes, a message the server refuses (shown, then forgotten), /clear
// and /bye, checked against its golden transcript and the
// conversations the server was sent.
func TestREPLScript(t *testing.T) {
	script := `/set parameter temperature 0
/set parameter num_predict 24
Once upon a time
"""
Lily went
to the park
"""
/show info
/show parameters
/set parameter bogus 1
/set parameter top_k many
/bogus
"""Sam said: "hi"."""
^C
"""
this half-typed message is dropped
^C
/set parameter temperature -1
a message the server refuses
/set parameter temperature 0
/clear
Once upon a time
/bye
not read: the chat is over
`
	r, rec, out, _ := localREPL(t, script)
	if err := r.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	golden(t, "repl-stories260k.txt", out.String())

	chats := rec.requests()
	if len(chats) != 5 {
		t.Fatalf("%d chat requests, want 5", len(chats))
	}
	roles := func(c api.ChatRequest) string {
		var s []string
		for _, m := range c.Messages {
			s = append(s, m.Role)
		}
		return strings.Join(s, ",")
	}
	for i, want := range []string{"user", "user,assistant,user", "user,assistant,user,assistant,user",
		"user,assistant,user,assistant,user,assistant,user", "user"} {
		if got := roles(chats[i]); got != want {
			t.Errorf("chat %d sent %s, want %s", i, got, want)
		}
	}
	if got := chats[1].Messages[2].Content; got != "Lily went\nto the park" {
		t.Errorf("the multi-line message was sent as %q", got)
	}
	if got := chats[2].Messages[4].Content; got != `Sam said: "hi".` {
		t.Errorf("a one-line \"\"\" message was sent as %q", got)
	}
	if reply := chats[1].Messages[1].Content; reply == "" || !strings.Contains(out.String(), ">>> Once upon a time\n"+reply+"\n\n") {
		t.Errorf("the first reply %q is not what was shown", reply)
	}
	if chats[0].Options["temperature"] != float64(0) || chats[0].Options["num_predict"] != float64(24) {
		t.Errorf("options sent: %v", chats[0].Options)
	}
	if n := len(r.msgs); n != 2 {
		t.Errorf("%d messages kept after /clear and one exchange, want 2", n)
	}
}

// TestREPLCtrlC: Ctrl-C while a reply streams stops it and the chat goes
// on, keeping the part of the reply that was shown.
func TestREPLCtrlC(t *testing.T) {
	script := "/set parameter temperature 0\nOnce upon a time\nand then\n"
	r, rec, out, in := localREPL(t, script)
	intr := make(chan os.Signal, 1)
	r.interrupts = intr
	// the first reply runs to the end of the context unless stopped: stop
	// it at its first piece of text, once the request is under way
	var armed, fired bool
	in.onLine = func(line string) { armed = line == "Once upon a time" }
	r.out = writerFunc(func(p []byte) (int, error) {
		if armed && !fired {
			fired = true
			intr <- os.Interrupt
			<-rec.lastCtx().Done()
		}
		return out.Write(p)
	})
	in.out = r.out
	if err := r.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	chats := rec.requests()
	if len(chats) != 2 {
		t.Fatalf("%d chat requests, want 2\n%s", len(chats), out)
	}
	partial := chats[1].Messages[1].Content
	if partial == "" || len(chats[1].Messages) != 3 {
		t.Fatalf("after Ctrl-C the chat sent %+v", chats[1].Messages)
	}
	if want := ">>> Once upon a time\n" + partial + "\n\n>>> and then\n"; !strings.Contains(out.String(), want) {
		t.Errorf("transcript:\n%s\nwant it to contain\n%s", out, want)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestLineEditor: the keys of a terminal become lines: Ctrl-C at the
// prompt (with text typed or not) is errInterrupt, a bracketed paste is
// taken whole (several lines, or a line far longer than x/term's 4096
// runes) with the text typed before and after it, UTF-8 comes through,
// Ctrl-D on an empty line is the end.
func TestLineEditor(t *testing.T) {
	long := strings.Repeat("abcdefghé ", 2000)
	keys := "half typed\x03" + "\x03" + "héllo, 世界\r" +
		"\x1b[200~first line\rsecond line\r\x1b[201~\r" +
		"say: \x1b[200~one\r\ntwo\x1b[201~and more\r" +
		"\x1b[200~" + long + "\x1b[201~\r" +
		"ab\x04\r" + // Ctrl-D with text typed: not the end
		"\x04"
	want := []string{"<Ctrl-C>", "<Ctrl-C>", "héllo, 世界", "first line\nsecond line", "say: one\ntwo\nand more", long, "ab"}
	t.Run("at once", func(t *testing.T) { checkLines(t, strings.NewReader(keys), want) })
	t.Run("a byte at a time", func(t *testing.T) { checkLines(t, iotest.OneByteReader(strings.NewReader(keys)), want) })
}

func checkLines(t *testing.T, keys io.Reader, want []string) {
	var echo bytes.Buffer
	r := newLineEditor(keys, &echo)
	var got []string
	for {
		line, err := r.ReadLine(promptMain)
		if err == io.EOF {
			break
		}
		if err == errInterrupt {
			line = "<Ctrl-C>"
		} else if err != nil {
			t.Fatal(err)
		}
		got = append(got, line)
	}
	for i := range max(len(got), len(want)) {
		if i >= len(got) || i >= len(want) {
			t.Fatalf("%d lines, want %d", len(got), len(want))
		}
		if got[i] != want[i] {
			t.Errorf("line %d: %d bytes %.80q, want %d bytes %.80q", i, len(got[i]), got[i], len(want[i]), want[i])
		}
	}
}
