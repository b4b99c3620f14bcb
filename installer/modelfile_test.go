package installer_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"folio/installer"
)

func TestParseModelfile(t *testing.T) {
	mf, err := installer.ParseModelfile(strings.NewReader(`# a model
from ./tiny.gguf
PARAMETER temperature 0.2
PARAMETER stop "<|end|>"
parameter stop </s>   
TEMPLATE """{{ .System }}
{{ .Prompt }}"""
SYSTEM "You are \"tiny\". \n is kept, \\ is one"

MESSAGE User hi there
MESSAGE assistant """hello"""
LICENSE MIT
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []installer.Command{
		{Name: "from", Value: "./tiny.gguf", Line: 2},
		{Name: "parameter", Key: "temperature", Value: "0.2", Line: 3},
		{Name: "parameter", Key: "stop", Value: "<|end|>", Line: 4},
		{Name: "parameter", Key: "stop", Value: "</s>", Line: 5},
		{Name: "template", Value: "{{ .System }}\n{{ .Prompt }}", Line: 6},
		{Name: "system", Value: `You are "tiny". \n is kept, \ is one`, Line: 8},
		{Name: "message", Key: "user", Value: "hi there", Line: 10},
		{Name: "message", Key: "assistant", Value: "hello", Line: 11},
		{Name: "license", Value: "MIT", Line: 12},
	}
	if !reflect.DeepEqual(mf.Commands, want) {
		t.Errorf("commands:\n%#v\nwant\n%#v", mf.Commands, want)
	}
	req, err := mf.Request("m", "/models")
	if err != nil {
		t.Fatal(err)
	}
	if req.FromFile != "/models/tiny.gguf" || req.From != "" || req.System != want[5].Value || len(req.License) != 1 ||
		!reflect.DeepEqual(req.Messages, []api.Message{{Role: "user", Content: "hi there"}, {Role: "assistant", Content: "hello"}}) ||
		req.Parameters["temperature"] != float32(0.2) || !reflect.DeepEqual(req.Parameters["stop"], []string{"<|end|>", "</s>"}) {
		t.Errorf("request %+v", req)
	}
	for _, c := range []struct{ from, name, file string }{
		{"llama3.2", "llama3.2", ""},
		{"hf.co/org/repo:Q8_0", "hf.co/org/repo:Q8_0", ""},
		{"x.gguf", "", "/m/x.gguf"},
		{"/abs/x", "", "/abs/x"},
	} {
		t.Run(c.from, func(t *testing.T) {
			mf, err := installer.ParseModelfile(strings.NewReader("FROM " + c.from))
			if err != nil {
				t.Fatal(err)
			}
			req, _ := mf.Request("m", "/m")
			if req.From != c.name || req.FromFile != c.file {
				t.Errorf("FROM %s: name %q, file %q", c.from, req.From, req.FromFile)
			}
		})
	}
}

// TestModelfileErrors: every error names its line.
func TestModelfileErrors(t *testing.T) {
	for _, c := range []struct {
		text string
		line int
		msg  string
	}{
		{"", 1, "no FROM"},
		{"# only a comment\n\n", 3, "no FROM"},
		{"FROM a\nFROM b", 2, "a second FROM"},
		{"FROM a\n\nFOO bar", 3, `unknown instruction "FOO"`},
		{"FROM a\nFROMx b", 2, `unknown instruction "FROMx"`},
		{"FROM a\nPARAMETER", 2, "PARAMETER needs a value"},
		{"FROM a\nPARAMETER temperature", 2, "PARAMETER needs a value"},
		{"FROM a\nPARAMETER temperature hot", 2, "invalid float"},
		{"FROM a\nPARAMETER warmth 1", 2, "unknown parameter"},
		{"FROM a\nSYSTEM", 2, "SYSTEM needs a value"},
		{"FROM a\nTEMPLATE \"\"\"abc\n\n", 2, `no closing """`},
		{"FROM a\nSYSTEM \"abc\nd", 2, `no closing "`},
		{"FROM a\nSYSTEM \"abc\" def", 2, "text after the closing quote"},
		{"FROM a\nSYSTEM \"\"\"a\nb\"\"\" x", 3, "text after the closing quote"},
		{"FROM a\nMESSAGE wizard hi", 2, `MESSAGE role "wizard"`},
		{"FROM a\nADAPTER x.gguf", 2, "ADAPTER"},
		{"FROM \"\"", 1, "FROM needs"},
	} {
		t.Run(c.msg, func(t *testing.T) {
			_, err := installer.ParseModelfile(strings.NewReader(c.text))
			var me *installer.ModelfileError
			if !errors.As(err, &me) || !errors.Is(err, installer.ErrModelfile) || me.Line != c.line || !strings.Contains(me.Msg, c.msg) {
				t.Errorf("%q: %v; want line %d: %s", c.text, err, c.line, c.msg)
			}
		})
	}
}

// FuzzModelfile: the parser never panics, and what it accepts it writes
// back (String) as a Modelfile that parses to the same commands.
func FuzzModelfile(f *testing.F) {
	for _, s := range []string{
		"FROM llama3.2\nPARAMETER temperature 1\nSYSTEM hi\n",
		"FROM ./x.gguf\nTEMPLATE \"\"\"{{ .Prompt }}\n\"\"\"\nMESSAGE user \"a \\\"b\\\" c\"\n",
		"# c\nfrom a\r\nparameter stop \"<|im_end|>\"\r\nLICENSE \"\"\"x\"\"\"",
		"FROM a\nSYSTEM \"multi\nline\"\nREQUIRES 0.5",
		"FROM a\nMESSAGE assistant \"\"\"\"quoted\"\"\"\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		mf, err := installer.ParseModelfile(strings.NewReader(s))
		if err != nil {
			var me *installer.ModelfileError
			if !errors.As(err, &me) || me.Line < 1 || me.Line > strings.Count(s, "\n")+1 {
				t.Fatalf("error %v: not a ModelfileError with a line of the input", err)
			}
			return
		}
		out := mf.String()
		again, err := installer.ParseModelfile(strings.NewReader(out))
		if err != nil {
			t.Fatalf("written back as\n%s\nit does not parse: %v", out, err)
		}
		strip := func(cs []installer.Command) []installer.Command {
			cs = append([]installer.Command(nil), cs...)
			for i := range cs {
				cs[i].Line = 0
			}
			return cs
		}
		if a, b := strip(mf.Commands), strip(again.Commands); !reflect.DeepEqual(a, b) {
			t.Fatalf("round trip changed the commands:\n%#v\n%#v", a, b)
		}
	})
}
