package installer

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ollama/ollama/api"
)

// ErrModelfile is wrapped by every error of ParseModelfile.
var ErrModelfile = errors.New("installer: bad Modelfile")

// maxModelfile bounds the bytes ParseModelfile reads.
const maxModelfile = 16 << 20

// ModelfileError is a Modelfile that does not parse, at a line (1-based).
type ModelfileError struct {
	Line int
	Msg  string
}

func (e *ModelfileError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }
func (e *ModelfileError) Unwrap() error { return ErrModelfile }

// Command is one instruction of a Modelfile.
type Command struct {
	Name  string // lower case: from, parameter, template, system, message, license, requires
	Key   string // PARAMETER's name or MESSAGE's role; "" otherwise
	Value string
	Line  int // where the instruction starts
}

// Modelfile is a parsed Modelfile, its instructions in order.
type Modelfile struct {
	Commands []Command
}

// instructions: name → whether it takes a key before its value.
var instructions = map[string]bool{
	"from": false, "parameter": true, "template": false, "system": false,
	"message": true, "license": false, "requires": false, "adapter": false,
}

var messageRoles = map[string]bool{"system": true, "user": true, "assistant": true}

// ParseModelfile reads Ollama's Modelfile format: one instruction per
// line (FROM, PARAMETER name value, TEMPLATE, SYSTEM, MESSAGE role text,
// LICENSE, REQUIRES), instruction names in any case, # comments, values
// to the end of the line, in "quotes" (\" and \\ escaped, may span
// lines) or in """triple quotes""" (taken as they are).
func ParseModelfile(r io.Reader) (*Modelfile, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxModelfile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxModelfile {
		return nil, &ModelfileError{Line: 1, Msg: fmt.Sprintf("longer than %d bytes", maxModelfile)}
	}
	p := &mfParser{s: string(data), line: 1}
	var mf Modelfile
	froms := 0
	for {
		c, ok, err := p.command()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		switch c.Name {
		case "from":
			if froms++; froms > 1 {
				return nil, &ModelfileError{Line: c.Line, Msg: "a second FROM: a model has one"}
			}
			if strings.TrimSpace(c.Value) == "" {
				return nil, &ModelfileError{Line: c.Line, Msg: "FROM needs a model name or a .gguf file"}
			}
		case "adapter":
			return nil, &ModelfileError{Line: c.Line, Msg: "ADAPTER: folio does not apply LoRA adapters yet"}
		case "message":
			if !messageRoles[c.Key] {
				return nil, &ModelfileError{Line: c.Line, Msg: fmt.Sprintf("MESSAGE role %q: use system, user or assistant", c.Key)}
			}
		case "parameter":
			if _, err := api.FormatParams(map[string][]string{c.Key: {c.Value}}); err != nil {
				return nil, &ModelfileError{Line: c.Line, Msg: fmt.Sprintf("PARAMETER %s: %v", c.Key, err)}
			}
		}
		mf.Commands = append(mf.Commands, c)
	}
	if froms == 0 {
		return nil, &ModelfileError{Line: p.line, Msg: "no FROM instruction: add FROM <model or file.gguf>"}
	}
	return &mf, nil
}

// mfParser walks a Modelfile's text, counting lines.
type mfParser struct {
	s    string
	i    int
	line int
}

func (p *mfParser) fail(line int, format string, args ...any) error {
	return &ModelfileError{Line: line, Msg: fmt.Sprintf(format, args...)}
}

// command reads the next instruction; ok is false at the end.
func (p *mfParser) command() (c Command, ok bool, err error) {
	for p.i < len(p.s) {
		switch ch := p.s[p.i]; {
		case ch == '\n':
			p.line++
			p.i++
		case ch == ' ' || ch == '\t' || ch == '\r':
			p.i++
		case ch == '#':
			for p.i < len(p.s) && p.s[p.i] != '\n' {
				p.i++
			}
		default:
			return p.instruction()
		}
	}
	return Command{}, false, nil
}

func (p *mfParser) instruction() (Command, bool, error) {
	c := Command{Line: p.line}
	start := p.i
	for p.i < len(p.s) && isLetter(p.s[p.i]) {
		p.i++
	}
	word := p.s[start:p.i]
	hasKey, known := instructions[strings.ToLower(word)]
	if !known || p.i < len(p.s) && !isBlank(p.s[p.i]) {
		end := p.i
		for end < len(p.s) && !isBlank(p.s[end]) {
			end++
		}
		return c, false, p.fail(c.Line, "unknown instruction %.40q: use FROM, PARAMETER, TEMPLATE, SYSTEM, MESSAGE or LICENSE", p.s[start:end])
	}
	c.Name = strings.ToLower(word)
	p.spaces()
	if hasKey {
		start := p.i
		for p.i < len(p.s) && !isBlank(p.s[p.i]) {
			p.i++
		}
		c.Key = p.s[start:p.i]
		if c.Name == "message" {
			c.Key = strings.ToLower(c.Key)
		}
		p.spaces()
	}
	if p.i >= len(p.s) || p.s[p.i] == '\n' || p.s[p.i] == '\r' {
		return c, false, p.fail(c.Line, "%s needs a value", strings.ToUpper(c.Name))
	}
	v, err := p.value()
	if err != nil {
		return c, false, err
	}
	c.Value = v
	return c, true, nil
}

// value reads an instruction's value: quoted, triple-quoted or bare.
func (p *mfParser) value() (string, error) {
	line := p.line
	var v string
	switch {
	case strings.HasPrefix(p.s[p.i:], `"""`):
		end := strings.Index(p.s[p.i+3:], `"""`)
		if end < 0 {
			return "", p.fail(line, `no closing """ for the one opened here`)
		}
		v = p.s[p.i+3 : p.i+3+end]
		p.line += strings.Count(v, "\n")
		p.i += 3 + end + 3
	case p.s[p.i] == '"':
		var b strings.Builder
		p.i++
		for {
			if p.i >= len(p.s) {
				return "", p.fail(line, `no closing " for the one opened here`)
			}
			ch := p.s[p.i]
			if ch == '"' {
				p.i++
				break
			}
			if ch == '\\' && p.i+1 < len(p.s) && (p.s[p.i+1] == '"' || p.s[p.i+1] == '\\') {
				ch = p.s[p.i+1]
				p.i++
			}
			if ch == '\n' {
				p.line++
			}
			b.WriteByte(ch)
			p.i++
		}
		v = b.String()
	default:
		end := strings.IndexByte(p.s[p.i:], '\n')
		if end < 0 {
			end = len(p.s) - p.i
		}
		v = strings.TrimRight(p.s[p.i:p.i+end], " \t\r")
		p.i += end
		return v, nil
	}
	p.spaces()
	if p.i < len(p.s) && p.s[p.i] != '\n' && p.s[p.i] != '\r' {
		return "", p.fail(p.line, "text after the closing quote: %.40q", p.s[p.i:])
	}
	return v, nil
}

func (p *mfParser) spaces() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isBlank(c byte) bool  { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// String writes the Modelfile back, every value quoted, so that parsing
// the result gives the same commands.
func (m *Modelfile) String() string {
	var b strings.Builder
	q := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	for _, c := range m.Commands {
		b.WriteString(strings.ToUpper(c.Name))
		if c.Key != "" {
			b.WriteString(" " + c.Key)
		}
		b.WriteString(` "` + q.Replace(c.Value) + "\"\n")
	}
	return b.String()
}

// Request turns the Modelfile into a CreateRequest for name. A FROM that
// names a file is taken relative to dir (the Modelfile's folder); ~/ is
// the home directory.
func (m *Modelfile) Request(name, dir string) (CreateRequest, error) {
	req := CreateRequest{Name: name}
	params := map[string][]string{}
	for _, c := range m.Commands {
		switch c.Name {
		case "from":
			v := strings.TrimSpace(c.Value)
			if p, ok := fromPath(v, dir); ok {
				req.FromFile = p
			} else {
				req.From = v
			}
		case "parameter":
			params[c.Key] = append(params[c.Key], c.Value)
		case "template":
			req.Template = c.Value
		case "system":
			req.System = c.Value
		case "license":
			req.License = append(req.License, c.Value)
		case "message":
			req.Messages = append(req.Messages, api.Message{Role: c.Key, Content: c.Value})
		}
	}
	if len(params) > 0 {
		ps, err := api.FormatParams(params)
		if err != nil {
			return req, fmt.Errorf("%w: %v", ErrModelfile, err)
		}
		req.Parameters = ps
	}
	return req, nil
}

// fromPath resolves FROM's value to a file when it names one: an
// absolute path, ~/…, or a path relative to dir that exists or ends in
// .gguf. Anything else is a model name.
func fromPath(v, dir string) (string, bool) {
	if rest, ok := strings.CutPrefix(v, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest), true
		}
	}
	if filepath.IsAbs(v) {
		return v, true
	}
	p := filepath.Join(dir, v)
	return p, fileExists(p) || strings.HasSuffix(strings.ToLower(v), ".gguf")
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}
