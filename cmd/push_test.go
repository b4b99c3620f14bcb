package cmd

import (
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"folio/installer"
	"folio/installer/fakehub"
	"folio/runner"
	"folio/server"
	"folio/store"
)

// TestPushCommand: folio push --insecure sends a model created here to
// the fake registry, in this process and through a server (api.Client's
// Push), printing pull's progress; folio pull in a fresh FOLIO_HOME gets
// the same weights, and run answers the same.
func TestPushCommand(t *testing.T) {
	hub := fakehub.New()
	defer hub.Close()
	noServer := os.Getenv("FOLIO_HOST") // TestMain's: hangs up at once
	t.Setenv("FOLIO_MODELS_PATH", t.TempDir())
	// Two models, so that the second push finds none of its blobs there.
	dir := t.TempDir()
	weights := map[string][]byte{}
	modelfile := func(name string, seed uint64) string {
		weights[name] = tinyModel(t, seed)
		file := fmt.Sprintf("tiny%d.gguf", seed)
		os.WriteFile(filepath.Join(dir, file), weights[name], 0o644)
		mf := filepath.Join(dir, file+".Modelfile")
		os.WriteFile(mf, []byte("FROM ./"+file+"\nSYSTEM \"You answer in one word.\"\nPARAMETER seed 7\n"), 0o644)
		return mf
	}
	run := func(args ...string) string {
		t.Helper()
		out, err := execute(t, args...)
		if err != nil {
			t.Fatalf("folio %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	checkOut := func(name, out string) {
		t.Helper()
		layer := "pushing " + fakehub.Digest(weights[name])[7:19]
		for _, want := range []string{"retrieving manifest\n", "starting upload\n", layer + ": 100% of " + humanBytes(int64(len(weights[name]))) + "\n",
			"pushing manifest\n", "success\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("push of %s printed\n%s\nwithout %q", name, out, want)
			}
		}
	}
	answer := func(name string) string {
		t.Helper()
		return run("run", name, "--num-predict", "4", "--temperature", "0", "hi")
	}

	if _, err := execute(t, "push", "tiny"); err == nil || !strings.Contains(err.Error(), "names no namespace") {
		t.Errorf("push tiny: %v; want it to ask for a namespace", err)
	}

	// In this process: FOLIO_HOME's registry.
	t.Setenv("FOLIO_HOME", t.TempDir())
	local := hub.Host() + "/here/tiny"
	run("create", local, "-f", modelfile(local, 7))
	checkOut(local, run("push", "--insecure", local))
	want := map[string]string{local: answer(local)}

	// Through a server, which has its own home.
	home := t.TempDir()
	st, err := store.OpenRegistry(home, store.RegistryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reg := server.NewLibraryRegistry(nil)
	reg.Dirs, reg.Store = nil, st
	srv := server.New(server.Config{Registry: reg, Version: "test", Load: runner.LoadOptions{NumCtx: 256},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Install: &installer.Options{Home: home, Store: st}})
	hs := httptest.NewServer(srv)
	defer func() { hs.Close(); srv.Close(); st.Close() }()
	u, _ := url.Parse(hs.URL)
	t.Setenv("FOLIO_HOST", u.Host)
	t.Setenv("FOLIO_HOME", t.TempDir()) // the server's home, not this one, has the model
	remote := hub.Host() + "/srv/tiny"
	run("create", remote, "-f", modelfile(remote, 8))
	checkOut(remote, run("push", "--insecure", remote))
	want[remote] = answer(remote)

	// Pulled back into an empty home, without the server.
	t.Setenv("FOLIO_HOST", noServer)
	t.Setenv("FOLIO_HOME", t.TempDir())
	for _, name := range []string{local, remote} {
		run("pull", "--insecure", name)
		man, err := os.ReadFile(filepath.Join(os.Getenv("FOLIO_HOME"), "manifests", hub.Host(), strings.Split(name, "/")[1], "tiny", "latest"))
		if err != nil || !strings.Contains(string(man), fakehub.Digest(weights[name])) || !strings.Contains(string(man), installer.MediaSystem) {
			t.Errorf("%s pulled back: manifest %s, %v; want the weights %s and the system prompt", name, man, err, fakehub.Digest(weights[name]))
		}
		if got := answer(name); got != want[name] {
			t.Errorf("%s pulled back answers %q; the pushed model %q", name, got, want[name])
		}
	}
}
