package server_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"folio/installer"
	"folio/installer/fakehub"
)

// pullConfigured publishes tiny with the given extra layers, pulls it
// into a fresh server and returns the client and the model's name.
func pullConfigured(t *testing.T, layers ...fakehub.Layer) (c *api.Client, name, home string) {
	t.Helper()
	hub := fakehub.New()
	t.Cleanup(hub.Close)
	layers = append([]fakehub.Layer{{MediaType: installer.MediaModel, Data: tinyBytes(t, 1)}}, layers...)
	hub.Publish("library", "tiny", "latest", layers...)
	c, _, home = newInstallServer(t)
	name = hub.Host() + "/library/tiny"
	if err := c.Pull(context.Background(), &api.PullRequest{Model: name, Insecure: true}, func(api.ProgressResponse) error { return nil }); err != nil {
		t.Fatal(err)
	}
	return c, name, home
}

func jsonLayer(t *testing.T, media string, v any) fakehub.Layer {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return fakehub.Layer{MediaType: media, Data: data}
}

// TestModelConfig: a pulled model's template (Ollama's Go syntax), system
// prompt and messages shape the prompts of /api/chat, /api/generate and
// /v1/chat/completions, as Ollama's server applies them.
func TestModelConfig(t *testing.T) {
	tmpl := `{{ range .Messages }}<{{ .Role }}>{{ .Content }}{{ end }}<assistant>`
	c, name, _ := pullConfigured(t,
		fakehub.Layer{MediaType: installer.MediaTemplate, Data: []byte(tmpl)},
		fakehub.Layer{MediaType: installer.MediaSystem, Data: []byte("be brief")},
		jsonLayer(t, installer.MediaMessages, []api.Message{{Role: "user", Content: "hi"}, {Role: "assistant", Content: "hello"}}))
	ctx := context.Background()

	chat := func(msgs ...api.Message) string {
		t.Helper()
		var got string
		no := false
		err := c.Chat(ctx, &api.ChatRequest{Model: name, Messages: msgs, Stream: &no, DebugRenderOnly: true}, func(r api.ChatResponse) error {
			if r.DebugInfo != nil {
				got = r.DebugInfo.RenderedTemplate
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got, want := chat(api.Message{Role: "user", Content: "q"}), "<system>be brief<user>hi<assistant>hello<user>q<assistant>"; got != want {
		t.Errorf("chat rendered %q, want %q", got, want)
	}
	if got, want := chat(api.Message{Role: "system", Content: "mine"}, api.Message{Role: "user", Content: "q"}),
		"<user>hi<assistant>hello<system>mine<user>q<assistant>"; got != want {
		t.Errorf("chat with its own system prompt rendered %q, want %q", got, want)
	}

	gen := func(req api.GenerateRequest) (string, error) {
		t.Helper()
		req.Model, req.DebugRenderOnly = name, true
		var got string
		err := c.Generate(ctx, &req, func(r api.GenerateResponse) error {
			if r.DebugInfo != nil {
				got = r.DebugInfo.RenderedTemplate
			}
			return nil
		})
		return got, err
	}
	if got, err := gen(api.GenerateRequest{Prompt: "q"}); err != nil || got != "<system>be brief<user>hi<assistant>hello<user>q<assistant>" {
		t.Errorf("generate rendered %q, %v", got, err)
	}
	if got, err := gen(api.GenerateRequest{Prompt: "q", System: "s", Context: []int{1}}); err != nil || got != "<system>s<user>q<assistant>" {
		t.Errorf("generate continuing a context rendered %q, %v (want the request's system, no model messages)", got, err)
	}
	// A request's template in Go syntax (Ollama clients send those), in
	// the legacy .System/.Prompt form: one turn after another, each with
	// its response appended, as Ollama renders it.
	if got, err := gen(api.GenerateRequest{Prompt: "q", Template: "[{{ .System }}]({{ .Prompt }})"}); err != nil || got != "[be brief](hi)hello[](q)" {
		t.Errorf("generate with a legacy Go template rendered %q, %v", got, err)
	}
	// Jinja sent with a request still works.
	if got, err := gen(api.GenerateRequest{Prompt: "q", Template: "{% for m in messages %}{{ m.role }};{% endfor %}"}); err != nil || got != "system;user;assistant;user;" {
		t.Errorf("generate with a Jinja template rendered %q, %v", got, err)
	}
	// /api/show reports the manifest's parts, and its Modelfile holds them.
	show, err := c.Show(ctx, &api.ShowRequest{Model: name})
	if err != nil {
		t.Fatal(err)
	}
	if show.Template != tmpl || show.System != "be brief" || len(show.Messages) != 2 {
		t.Errorf("show: template %q, system %q, messages %v", show.Template, show.System, show.Messages)
	}
	mf, err := installer.ParseModelfile(strings.NewReader(show.Modelfile))
	if err != nil {
		t.Fatalf("show's Modelfile does not parse: %v\n%s", err, show.Modelfile)
	}
	var kinds []string
	for _, cmd := range mf.Commands {
		kinds = append(kinds, cmd.Name)
	}
	if got := strings.Join(kinds, " "); got != "from template system message message" {
		t.Errorf("show's Modelfile has %q, want from template system message message:\n%s", got, show.Modelfile)
	}

	// Templates sent with a request may not loop without bound.
	for _, bad := range []string{
		"{{ range 1000000000000 }}x{{ end }}",
		"{{ range .Messages }}{{ range $.Messages }}{{ range $.Messages }}{{ end }}{{ end }}{{ end }}",
		`{{ define "x" }}{{ template "x" . }}{{ end }}{{ template "x" . }}`,
	} {
		_, err := gen(api.GenerateRequest{Prompt: "q", Template: bad})
		var se api.StatusError
		if err == nil || !strings.Contains(err.Error(), "template") {
			t.Errorf("template %q: got %v, want a 400 naming the template", bad, err)
		} else if asStatus(err, &se) && se.StatusCode != 400 {
			t.Errorf("template %q: status %d, want 400", bad, se.StatusCode)
		}
	}
}

func asStatus(err error, se *api.StatusError) bool {
	s, ok := err.(api.StatusError)
	if ok {
		*se = s
	}
	return ok
}

// TestModelParameters: a model's parameters are defaults under the
// request's options: num_predict 2 from the model, 4 from the request.
func TestModelParameters(t *testing.T) {
	c, name, _ := pullConfigured(t, jsonLayer(t, installer.MediaParams, map[string]any{"num_predict": 2, "temperature": 0}))
	ctx := context.Background()
	run := func(opts map[string]any) api.GenerateResponse {
		t.Helper()
		var last api.GenerateResponse
		no := false
		err := c.Generate(ctx, &api.GenerateRequest{Model: name, Prompt: "once upon a time", Raw: true, Stream: &no, Options: opts},
			func(r api.GenerateResponse) error { last = r; return nil })
		if err != nil {
			t.Fatal(err)
		}
		return last
	}
	show, err := c.Show(ctx, &api.ShowRequest{Model: name})
	if err != nil || !strings.Contains(show.Parameters, "num_predict") || !strings.Contains(show.Modelfile, "PARAMETER num_predict 2\n") {
		t.Errorf("show: parameters %q, Modelfile %q, %v", show.Parameters, show.Modelfile, err)
	}
	if r := run(nil); r.EvalCount != 2 || r.DoneReason != "length" {
		t.Errorf("model num_predict 2: %d tokens, done_reason %q", r.EvalCount, r.DoneReason)
	}
	if r := run(map[string]any{"num_predict": 4}); r.EvalCount != 4 || r.DoneReason != "length" {
		t.Errorf("request num_predict 4 over the model's 2: %d tokens, done_reason %q", r.EvalCount, r.DoneReason)
	}
	// A model whose parameters are wrong says where they come from.
	c2, name2, _ := pullConfigured(t, jsonLayer(t, installer.MediaParams, map[string]any{"num_ctx": -5}))
	err = c2.Generate(ctx, &api.GenerateRequest{Model: name2, Prompt: "x", Raw: true}, func(api.GenerateResponse) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "model's parameters") {
		t.Errorf("bad model parameters: got %v, want an error naming the model's parameters", err)
	}
}

// TestDeletePrunes: deleting a pulled model removes its manifest and the
// blobs no other model uses, as ollama rm does; a copy keeps them alive.
func TestDeletePrunes(t *testing.T) {
	c, name, home := pullConfigured(t, fakehub.Layer{MediaType: installer.MediaSystem, Data: []byte("be brief")})
	ctx := context.Background()
	blobs := func() int {
		ents, err := os.ReadDir(filepath.Join(home, "blobs"))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "sha256-") {
				n++
			}
		}
		return n
	}
	before := blobs()
	if before < 3 { // config, weights, system
		t.Fatalf("%d blobs after the pull, want at least 3", before)
	}
	if err := c.Copy(ctx, &api.CopyRequest{Source: name, Destination: "mine"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, &api.DeleteRequest{Model: name}); err != nil {
		t.Fatal(err)
	}
	if n := blobs(); n == 0 {
		t.Errorf("deleting one of two names of the weights removed every blob")
	}
	if err := c.Delete(ctx, &api.DeleteRequest{Model: "mine"}); err != nil {
		t.Fatal(err)
	}
	if n := blobs(); n != 0 {
		t.Errorf("%d blobs left after deleting every model, want 0", n)
	}
}
