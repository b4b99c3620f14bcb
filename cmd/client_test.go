package cmd

import (
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"folio/internal/fixtures"
	"folio/runner"
	"folio/server"
)

// TestMain points FOLIO_HOST at a port that hangs up at once, so that run
// loads models in this process whatever server this machine runs (one a
// person started on Ollama's port).
func TestMain(m *testing.M) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	os.Setenv("FOLIO_HOST", ln.Addr().String())
	code := m.Run()
	ln.Close()
	os.Exit(code)
}

// startServer serves a library holding stories260K (as stories260K.gguf)
// and points FOLIO_HOST at it for the test.
func startServer(t *testing.T) *server.Server {
	t.Helper()
	dir := t.TempDir()
	data, err := os.ReadFile(fixtures.Model(t, "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "stories260K.gguf"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	reg := server.NewLibraryRegistry(nil)
	reg.Dirs = []string{dir}
	srv := server.New(server.Config{Registry: reg, Version: "test", Load: runner.LoadOptions{NumCtx: 512},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Close() })
	u, _ := url.Parse(hs.URL)
	t.Setenv("FOLIO_HOST", u.Host)
	// run finds no model locally: what it runs comes from the server
	t.Setenv("FOLIO_MODELS_PATH", t.TempDir())
	return srv
}

func TestNoServer(t *testing.T) {
	for _, args := range [][]string{{"list"}, {"ps"}, {"stop", "m"}, {"rm", "m"}, {"cp", "a", "b"}} {
		_, err := execute(t, args...)
		if err == nil || !strings.Contains(err.Error(), "start one with folio serve") {
			t.Errorf("%v without a server: %v", args, err)
		}
	}
}
