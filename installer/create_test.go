package installer_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"folio/installer"
	"folio/installer/fakehub"
	"folio/models/gguf"
)

// create parses a Modelfile written next to dir's tiny.gguf and creates
// name from it.
func create(t *testing.T, opt installer.Options, dir, name, modelfile string, link bool) (installer.CreateRequest, error) {
	t.Helper()
	mf, err := installer.ParseModelfile(strings.NewReader(modelfile))
	if err != nil {
		t.Fatal(err)
	}
	req, err := mf.Request(name, dir)
	if err != nil {
		t.Fatal(err)
	}
	req.Link = link
	_, err = installer.Create(context.Background(), req, opt)
	return req, err
}

func TestCreate(t *testing.T) {
	dir := t.TempDir()
	weights := tinyGGUF(t, gguf.TypeQ8_0, 1)
	file := filepath.Join(dir, "tiny.gguf")
	if err := os.WriteFile(file, weights, 0o644); err != nil {
		t.Fatal(err)
	}
	home, st := newHome(t)
	opt := testOptions(home, st)

	// From a file: copied into blobs/, with every kind of layer.
	_, err := create(t, opt, dir, "mine", `FROM ./tiny.gguf
PARAMETER temperature 0.25
PARAMETER stop <end>
TEMPLATE "{{ .Prompt }}"
SYSTEM Be brief.
MESSAGE user hi
MESSAGE assistant hello
LICENSE MIT`, false)
	if err != nil {
		t.Fatal(err)
	}
	m, err := st.Model("mine:latest")
	blob, _ := installer.BlobPath(home, fakehub.Digest(weights))
	if err != nil || m.Path != blob || m.Digest != fakehub.Digest(weights) || m.Template != "{{ .Prompt }}" ||
		m.Parameters != `{"stop":["<end>"],"temperature":0.25}` || m.Family != "llama" {
		t.Fatalf("registered %+v, %v", m, err)
	}
	cfg, err := installer.ReadConfig(home, "mine")
	if err != nil || cfg.System != "Be brief." || len(cfg.Messages) != 2 || cfg.Messages[1].Content != "hello" || cfg.License[0] != "MIT" {
		t.Errorf("config %+v, %v", cfg, err)
	}
	if text := generate(t, st, "mine"); text == "" {
		t.Error("the created model generated nothing")
	}

	// From a model: its layers are kept unless replaced; parameters merge.
	if _, err := create(t, opt, dir, "ns/derived:v2", "FROM mine\nSYSTEM Be verbose.\nPARAMETER top_k 7", false); err != nil {
		t.Fatal(err)
	}
	d, err := st.Model("ns/derived:v2")
	cfg, _ = installer.ReadConfig(home, "ns/derived:v2")
	if err != nil || d.Path != blob || d.Template != m.Template || cfg.System != "Be verbose." || cfg.License[0] != "MIT" ||
		d.Parameters != `{"stop":["<end>"],"temperature":0.25,"top_k":7}` {
		t.Errorf("derived %+v (%+v), %v", d, cfg, err)
	}

	// --link: registered where it is; blobs/ holds no copy.
	home2, st2 := newHome(t)
	if _, err := create(t, testOptions(home2, st2), dir, "linked", "FROM "+file, true); err != nil {
		t.Fatal(err)
	}
	l, err := st2.Model("linked:latest")
	if err != nil || l.Path != file || l.Digest != fakehub.Digest(weights) {
		t.Errorf("linked %+v, %v", l, err)
	}
	if fs := blobFiles(t, home2); len(fs) != 0 {
		t.Errorf("--link copied: %v", fs)
	}
	if text := generate(t, st2, "linked"); text == "" {
		t.Error("the linked model generated nothing")
	}
	// A linked model's file is the user's: pruning never removes it.
	if err := st2.DeleteModel("linked:latest"); err != nil {
		t.Fatal(err)
	}
	o := testOptions(home2, st2)
	if _, err := o.Prune(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(file); err != nil {
		t.Errorf("prune removed the linked file: %v", err)
	}
}

func TestCreateErrors(t *testing.T) {
	dir := t.TempDir()
	home, st := newHome(t)
	opt := testOptions(home, st)
	os.WriteFile(filepath.Join(dir, "notes.gguf"), []byte("not a model"), 0o644)
	whole := tinyGGUF(t, gguf.TypeQ8_0, 1)
	os.WriteFile(filepath.Join(dir, "tiny.gguf"), whole, 0o644)
	os.WriteFile(filepath.Join(dir, "cut.gguf"), whole[:len(whole)/2], 0o644)
	for _, c := range []struct {
		modelfile string
		link      bool
		want      string
	}{
		{"FROM ./missing.gguf", false, "no such file"},
		{"FROM ./notes.gguf", false, "not a usable GGUF"},
		{"FROM ./notes.gguf", true, "not a usable GGUF"},
		{"FROM ./cut.gguf", false, "FROM must be a GGUF file"},
		{"FROM some-model", true, "--link needs FROM to be a GGUF file"},
		{"FROM ./tiny.gguf\nTEMPLATE \"\"\"{{ define \"a\" }}{{ template \"a\" . }}{{ end }}{{ template \"a\" . }}\"\"\"", false,
			`the template is refused: template: limit exceeded: template "a" calls itself`},
	} {
		t.Run(c.want, func(t *testing.T) {
			if _, err := create(t, opt, dir, "x", c.modelfile, c.link); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%q: %v, want %q", c.modelfile, err, c.want)
			}
		})
	}
	if ms, _ := st.Models(); len(ms) != 0 {
		t.Errorf("registered %+v", ms)
	}
	if fs := blobFiles(t, home); len(fs) != 0 {
		t.Errorf("a FROM file that is not GGUF was copied into blobs/: %v", fs)
	}
	bad := []installer.CreateRequest{
		{Name: "../x", From: "a"},
		{Name: "x", Files: map[string]string{"m.gguf": "sha256:" + strings.Repeat("a", 64)}},
		{Name: "x", Files: map[string]string{"m.gguf": "../../etc/passwd"}},
		{Name: "x", Files: map[string]string{"m.safetensors": fakehub.Digest(nil)}},
		{Name: "x", From: "a", Parameters: map[string]any{"warmth": 1}},
		{Name: "x", From: "a", Parameters: map[string]any{"temperature": "hot"}},
	}
	for _, r := range bad {
		if _, err := installer.Create(context.Background(), r, opt); err == nil {
			t.Errorf("%+v: created", r)
		}
	}
}

// TestImportBlob: an upload is kept only under its own digest, and a
// create can name it.
func TestImportBlob(t *testing.T) {
	home, st := newHome(t)
	opt := testOptions(home, st)
	weights := tinyGGUF(t, gguf.TypeQ8_0, 2)
	digest := fakehub.Digest(weights)
	err := installer.ImportBlob(digest, bytes.NewReader(weights[:len(weights)-1]), opt)
	if !errors.Is(err, installer.ErrDigest) || installer.HasBlob(home, digest) {
		t.Errorf("a short upload: %v, kept %v", err, installer.HasBlob(home, digest))
	}
	if fs := blobFiles(t, home); len(fs) != 0 {
		t.Errorf("left behind: %v", fs)
	}
	if err := installer.ImportBlob(digest, bytes.NewReader(weights), opt); err != nil || !installer.HasBlob(home, digest) {
		t.Fatalf("upload: %v", err)
	}
	req := installer.CreateRequest{Name: "up", Files: map[string]string{"tiny.gguf": digest}, System: "hi"}
	if _, err := installer.Create(context.Background(), req, opt); err != nil {
		t.Fatal(err)
	}
	if m, err := st.Model("up:latest"); err != nil || m.Digest != digest {
		t.Errorf("registered %+v, %v", m, err)
	}
}
