package server_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"folio/installer"
	"folio/installer/fakehub"
)

// doubling is a Go template whose {{ template }} calls double its work at
// each of n levels.
func doubling(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{{ define "t%d" }}{{ template "t%d" . }}{{ template "t%d" . }}{{ end }}`, i, i+1, i+1)
	}
	fmt.Fprintf(&b, `{{ define "t%d" }}x{{ end }}{{ range .Messages }}{{ template "t0" . }}{{ end }}`, n)
	return b.String()
}

// TestGoTemplateBounds: a Go template that doubles its work at each of 30
// levels of {{ template }} calls is refused where templates are installed
// (/api/create answers 400 before it streams; a pull of a registry model
// carrying it fails, registering nothing), and an installed template that
// loops without bound stops at render with a 400 naming the limit, its
// goroutine done.
func TestGoTemplateBounds(t *testing.T) {
	exp := doubling(30)
	c, name, _ := pullConfigured(t)
	ctx := context.Background()
	no := false
	for _, stream := range []*bool{nil, &no} {
		err := c.Create(ctx, &api.CreateRequest{Model: "exp", From: name, Template: exp, Stream: stream}, func(api.ProgressResponse) error { return nil })
		var se api.StatusError
		if !asStatus(err, &se) || se.StatusCode != 400 || !strings.Contains(err.Error(), "calls expand it to more than 5000000 steps") {
			t.Errorf("create with the doubling template (stream %v): %v, want a 400 saying it expands too far", stream, err)
		}
	}
	if _, err := c.Show(ctx, &api.ShowRequest{Model: "exp"}); err == nil {
		t.Error("the refused model was registered")
	}

	hub := fakehub.New()
	defer hub.Close()
	hub.Publish("library", "exp", "latest", fakehub.Layer{MediaType: installer.MediaModel, Data: tinyBytes(t, 1)},
		fakehub.Layer{MediaType: installer.MediaTemplate, Data: []byte(exp)})
	pulled := hub.Host() + "/library/exp"
	err := c.Pull(ctx, &api.PullRequest{Model: pulled, Insecure: true}, func(api.ProgressResponse) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "the template is refused") {
		t.Errorf("pull of a model with the doubling template: %v, want the template refused", err)
	}
	if _, err := c.Show(ctx, &api.ShowRequest{Model: pulled}); err == nil {
		t.Error("the refused pull was registered")
	}

	// Loops run as they may; the render stops them.
	loop := `{{ range 1000000000000 }}{{ end }}{{ range .Messages }}{{ .Content }}{{ end }}`
	if err := c.Create(ctx, &api.CreateRequest{Model: "loop", From: name, Template: loop}, func(api.ProgressResponse) error { return nil }); err != nil {
		t.Fatal(err)
	}
	chat := func(model string) error {
		return c.Chat(ctx, &api.ChatRequest{Model: model, Messages: []api.Message{{Role: "user", Content: "hi"}}, Stream: &no, DebugRenderOnly: true},
			func(api.ChatResponse) error { return nil })
	}
	if err := chat(name); err != nil { // loads the model and opens the connection
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	err = chat("loop")
	var se api.StatusError
	if !asStatus(err, &se) || se.StatusCode != 400 || !strings.Contains(err.Error(), "rendering takes more than 5000000 steps") {
		t.Errorf("chat with an endless loop: %v, want a 400 naming the step limit", err)
	}
	for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > before; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after the render failed, %d before", runtime.NumGoroutine(), before)
		}
	}
}
