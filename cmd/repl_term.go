package cmd

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"unicode/utf8"

	"golang.org/x/term"
)

// The chat's input: x/term's line editor in raw mode while a line is
// typed (cursor keys, history), the terminal left cooked while a reply
// streams, so that Ctrl-C is a SIGINT that stops the reply. Two things
// x/term does not do as a chat needs are done by keyReader, which sits
// between the terminal and x/term: Ctrl-C at the prompt (x/term reads it
// as the end of input) and pastes (x/term keeps 4096 runes of a line and
// drops the rest; a paste is taken whole, however long).

// chatInTerminal runs r on a terminal.
func chatInTerminal(ctx context.Context, r *repl, in *os.File, out io.Writer) error {
	intr := make(chan os.Signal, 1)
	signal.Notify(intr, os.Interrupt)
	defer signal.Stop(intr)
	tr := newTermReader(in, out)
	defer tr.Close()
	r.in, r.out, r.interrupts = tr, out, intr
	return r.run(ctx)
}

// termReader reads lines from a terminal.
type termReader struct {
	fd    int // -1: not a terminal (tests): no modes are set
	t     *term.Terminal
	keys  *keyReader
	out   io.Writer
	width int // the terminal's columns; 0: unknown
}

func newTermReader(in *os.File, out io.Writer) *termReader {
	r := newLineEditor(in, out)
	r.fd = int(in.Fd())
	return r
}

// newLineEditor is a termReader on in and out that sets no terminal modes.
func newLineEditor(in io.Reader, out io.Writer) *termReader {
	keys := &keyReader{r: in}
	t := term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{keys, out}, "")
	t.History = &history{}
	t.SetBracketedPasteMode(true)
	return &termReader{fd: -1, t: t, keys: keys, out: out}
}

// Close turns bracketed paste off again.
func (r *termReader) Close() { r.t.SetBracketedPasteMode(false) }

// ReadLine reads a line, with any pastes in it, in raw mode. A message
// with a paste goes on, under a "... " prompt, until Enter on a line.
func (r *termReader) ReadLine(prompt string) (string, error) {
	if r.fd >= 0 {
		old, err := term.MakeRaw(r.fd)
		if err != nil {
			return "", fmt.Errorf("terminal: %w", err)
		}
		defer term.Restore(r.fd, old)
		if w, h, err := term.GetSize(r.fd); err == nil {
			r.t.SetSize(w, h)
			r.width = w
		}
	}
	var parts []string
	for {
		r.t.SetPrompt(prompt)
		line, err := r.t.ReadLine()
		if r.keys.takeInterrupt() {
			return "", errInterrupt
		}
		if err != nil {
			return "", err
		}
		paste, pasted := r.keys.takePaste()
		if !pasted {
			if line != "" || len(parts) == 0 {
				parts = append(parts, line)
			}
			return strings.Join(parts, "\n"), nil
		}
		r.echoPaste(prompt, line, paste)
		parts = append(parts, line+strings.TrimSuffix(paste, "\n"))
		prompt = promptMore
	}
}

// echoPaste shows a paste after the text typed before it: x/term has
// moved to the next line, so go back to the end of that text first.
func (r *termReader) echoPaste(prompt, line, paste string) {
	var b strings.Builder
	if r.width > 0 {
		col := (utf8.RuneCountInString(prompt) + utf8.RuneCountInString(line)) % r.width
		fmt.Fprintf(&b, "\x1b[A\x1b[%dG", col+1)
	}
	b.WriteString(strings.ReplaceAll(paste, "\n", "\r\n"))
	if !strings.HasSuffix(paste, "\n") {
		b.WriteString("\r\n")
	}
	io.WriteString(r.out, b.String())
}

var (
	pasteStart = []byte("\x1b[200~")
	pasteEnd   = []byte("\x1b[201~")
)

// keyReader passes a terminal's keys on to x/term, but for two:
//   - Ctrl-C becomes "end of line, delete to its start, Enter": x/term
//     then returns an empty line, and takeInterrupt says it was a Ctrl-C;
//   - a bracketed paste is kept here whole and becomes Enter: x/term
//     returns the text typed before it, and takePaste has the paste.
//
// Each Read passes keys up to the first Enter at most, so that the line
// x/term returns ends with the last Read. The reader belongs to the
// goroutine that calls ReadLine.
type keyReader struct {
	r       io.Reader
	pending []byte // keys read, not yet passed on
	err     error  // the error of the read that filled pending
	intr    bool   // the last Read ended with a Ctrl-C
	paste   *string
}

// fill reads more keys into pending.
func (k *keyReader) fill() error {
	if k.err != nil {
		err := k.err
		k.err = nil
		return err
	}
	buf := make([]byte, 4096)
	n, err := k.r.Read(buf)
	k.pending = append(k.pending, buf[:n]...)
	if n > 0 {
		k.err = err
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

func (k *keyReader) Read(p []byte) (int, error) {
	k.intr, k.paste = false, nil
	if len(k.pending) == 0 {
		if err := k.fill(); err != nil {
			return 0, err
		}
	}
	// a paste (or what may be the start of one): read to its end
	for bytes.HasPrefix(pasteStart, k.pending[:min(len(k.pending), len(pasteStart))]) {
		if bytes.HasPrefix(k.pending, pasteStart) {
			if end := bytes.Index(k.pending, pasteEnd); end >= 0 {
				text := string(k.pending[len(pasteStart):end])
				text = strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\r", "\n")
				k.pending = k.pending[end+len(pasteEnd):]
				k.paste = &text
				p[0] = '\r'
				return 1, nil
			}
		}
		if err := k.fill(); err != nil {
			break // a paste cut short: pass on what came
		}
	}
	const ctrlC = "\x05\x15\r" // Ctrl-E, Ctrl-U, Enter
	n := 0
	for len(k.pending) > 0 && n < len(p) {
		b := k.pending[0]
		if b == 0x1b && n > 0 && bytes.HasPrefix(pasteStart, k.pending[:min(len(k.pending), len(pasteStart))]) {
			break // a paste next: pass the keys before it first
		}
		if b == 3 {
			if n+len(ctrlC) <= len(p) {
				n += copy(p[n:], ctrlC)
				k.pending = k.pending[1:]
				k.intr = true
			}
			break
		}
		p[n] = b
		n++
		k.pending = k.pending[1:]
		if b == '\r' && len(k.pending) > 0 && k.pending[0] == '\n' && n < len(p) {
			p[n] = '\n' // x/term takes CR LF as one Enter
			n++
			k.pending = k.pending[1:]
		}
		if b == '\r' || b == '\n' {
			break
		}
	}
	return n, nil
}

func (k *keyReader) takeInterrupt() bool {
	was := k.intr
	k.intr = false
	return was
}

func (k *keyReader) takePaste() (string, bool) {
	p := k.paste
	k.paste = nil
	if p == nil {
		return "", false
	}
	return *p, true
}

// history keeps the last 100 lines typed, skipping empty lines and
// repeats, for the Up and Down keys.
type history struct{ lines []string }

func (h *history) Add(s string) {
	if strings.TrimSpace(s) == "" || (len(h.lines) > 0 && h.lines[len(h.lines)-1] == s) {
		return
	}
	h.lines = append(h.lines, s)
	if len(h.lines) > 100 {
		h.lines = h.lines[1:]
	}
}

func (h *history) Len() int          { return len(h.lines) }
func (h *history) At(idx int) string { return h.lines[len(h.lines)-1-idx] }
