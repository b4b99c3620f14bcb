package cmd

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestParseHost: FOLIO_HOST in Ollama's forms; without a host serve
// listens on 127.0.0.1 (this machine only), without a port on 11434.
func TestParseHost(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{"", "127.0.0.1:11434", ""},
		{"   ", "127.0.0.1:11434", ""},
		{":8080", "127.0.0.1:8080", ""},
		{"0.0.0.0", "0.0.0.0:11434", ""},
		{"0.0.0.0:9000", "0.0.0.0:9000", ""},
		{"localhost", "localhost:11434", ""},
		{"http://127.0.0.1:11435", "127.0.0.1:11435", ""},
		{"https://example.org/", "example.org:11434", ""},
		{"http://host:1234/api", "host:1234", ""},
		{"::1", "[::1]:11434", ""},
		{"[::1]", "[::1]:11434", ""},
		{"[::1]:8080", "[::1]:8080", ""},
		{"http://[::]:8080", "[::]:8080", ""},
		{"host:0", "", "port"},
		{"host:99999", "", "port"},
		{"host:http", "", "port"},
		{"ftp://host", "", "scheme"},
		{"a b:80", "", "host"},
		{"user@host:80", "", "host"},
	} {
		t.Run(c.in, func(t *testing.T) {
			got, err := parseHost(c.in)
			switch {
			case c.err == "" && (err != nil || got != c.want):
				t.Errorf("parseHost(%q) = %q, %v; want %q", c.in, got, err, c.want)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "FOLIO_HOST")):
				t.Errorf("parseHost(%q) = %q, %v; want an error about the %s naming FOLIO_HOST", c.in, got, err, c.err)
			}
		})
	}
}

// TestServeConfigSecurity: FOLIO_ORIGINS and FOLIO_MAX_BODY reach the
// server's configuration; a bad FOLIO_MAX_BODY is refused by name.
func TestServeConfigSecurity(t *testing.T) {
	t.Setenv("FOLIO_ORIGINS", "https://a.example,chrome-extension://*")
	t.Setenv("FOLIO_MAX_BODY", "1048576")
	cfg, err := serverConfig()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(cfg.Origins, ",") != "https://a.example,chrome-extension://*" || cfg.MaxBodyBytes != 1<<20 {
		t.Errorf("origins %q, max body %d", cfg.Origins, cfg.MaxBodyBytes)
	}
	t.Setenv("FOLIO_MAX_BODY", "lots")
	if _, err := serverConfig(); err == nil || !strings.Contains(err.Error(), "FOLIO_MAX_BODY") {
		t.Errorf("FOLIO_MAX_BODY=lots: %v", err)
	}
}

// TestServeConfigKVCacheType: FOLIO_KV_CACHE_TYPE reaches the models' load
// options; a type folio has no cache for is refused by name.
func TestServeConfigKVCacheType(t *testing.T) {
	t.Setenv("FOLIO_KV_CACHE_TYPE", "q8_0")
	cfg, err := serverConfig()
	if err != nil || cfg.Load.KVType != "q8_0" || !cfg.KVTypeFallback {
		t.Fatalf("FOLIO_KV_CACHE_TYPE=q8_0: K/V type %q, %v", cfg.Load.KVType, err)
	}
	t.Setenv("FOLIO_KV_CACHE_TYPE", "q4_0")
	if _, err := serverConfig(); err == nil || !strings.Contains(err.Error(), "FOLIO_KV_CACHE_TYPE") || !strings.Contains(err.Error(), "q8_0") {
		t.Errorf("FOLIO_KV_CACHE_TYPE=q4_0: %v, want an error naming the variable and the types", err)
	}
}

// TestServeSaysWhereTheStoreIs: folio serve says at start where the
// persisted prefix K/V cache is and its budget (FOLIO_KV_STORE_MAX), and
// logs each request it answers.
func TestServeSaysWhereTheStoreIs(t *testing.T) {
	home := t.TempDir()
	t.Setenv("FOLIO_KV_STORE_MAX", "123456789")
	_, addr, out := startServe(t, home)
	want := []string{`msg="persisted prefix K/V cache" file=` + filepath.Join(home, "kvcache.db"),
		`budget="123.46 MB" budget_bytes=123456789`, "set_budget_with=FOLIO_KV_STORE_MAX"}
	for _, w := range want {
		if !strings.Contains(out.String(), w) {
			t.Errorf("serve's log lacks %q:\n%s", w, out.String())
		}
	}
	resp, err := http.Get("http://" + addr + "/api/tags")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// the line is written as the handler returns, just after the answer
	line := "msg=request method=GET path=/api/tags status=200"
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(out.String(), line); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("serve's log lacks the access line %q:\n%s", line, out.String())
		}
	}
}

// TestServeDebug: FOLIO_DEBUG=1 logs at debug level (the settings at
// start, HF_TOKEN's value left out); unset, serve logs no debug line; any
// other value is refused with what to set.
func TestServeDebug(t *testing.T) {
	t.Setenv("FOLIO_DEBUG", "1")
	t.Setenv("HF_TOKEN", "hf_secretvalue")
	_, _, out := startServe(t, t.TempDir())
	for _, w := range []string{"level=DEBUG msg=settings", "FOLIO_DEBUG:1", "HF_TOKEN:(set)"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("with FOLIO_DEBUG=1 serve's log lacks %q:\n%s", w, out.String())
		}
	}
	if strings.Contains(out.String(), "hf_secretvalue") {
		t.Errorf("serve's debug log shows HF_TOKEN's value:\n%s", out.String())
	}

	t.Setenv("FOLIO_DEBUG", "")
	_, _, out = startServe(t, t.TempDir())
	if strings.Contains(out.String(), "level=DEBUG") {
		t.Errorf("without FOLIO_DEBUG serve logs debug lines:\n%s", out.String())
	}

	t.Setenv("FOLIO_DEBUG", "yes")
	if _, err := execute(t, "serve"); err == nil || !strings.Contains(err.Error(), "FOLIO_DEBUG=\"yes\": set it to 1") {
		t.Errorf("FOLIO_DEBUG=yes: %v", err)
	}
}

// TestServeKeepsConversations: folio serve keeps the chat page's
// conversations in FOLIO_HOME's folio.db, where the next serve (after a
// kill) finds them.
func TestServeKeepsConversations(t *testing.T) {
	home := t.TempDir()
	child, addr, _ := startServe(t, home)
	resp, err := http.Post("http://"+addr+"/api/folio/conversations", "application/json", strings.NewReader(`{"model":"m","title":"kept"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d, want 201", resp.StatusCode)
	}
	child.Process.Kill()
	child.Wait()
	_, addr, _ = startServe(t, home)
	resp, err = http.Get("http://" + addr + "/api/folio/conversations")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(data), `"title":"kept"`) {
		t.Fatalf("after a restart: %d %s", resp.StatusCode, data)
	}
}
