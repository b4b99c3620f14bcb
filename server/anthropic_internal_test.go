package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"folio/internal/fixtures"
	"folio/runner"
)

// TestAnthropicErrorTypes: errors map to Anthropic's statuses and types in
// one place (anthErrorOf, over statusOf): a full queue is 529
// overloaded_error, which the SDK retries and raises as OverloadedError.
func TestAnthropicErrorTypes(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
		typ    string
	}{
		{fmt.Errorf("%w (3 queued): retry later or raise FOLIO_MAX_QUEUE", runner.ErrBusy), 529, "overloaded_error"},
		{fmt.Errorf("%w: claude-opus", ErrModelNotFound), 404, "not_found_error"},
		{fmt.Errorf("%w: no", errNotFoundPath), 404, "not_found_error"},
		{&http.MaxBytesError{Limit: 10}, 413, "request_too_large"},
		{badParam("max_tokens", "max_tokens is required"), 400, "invalid_request_error"},
		{fmt.Errorf("%w: the prompt is too long", runner.ErrRequest), 400, "invalid_request_error"},
		{fmt.Errorf("%w: origin", errForbidden), 403, "permission_error"},
		{fmt.Errorf("%w: loading", runner.ErrNoMemory), 507, "api_error"},
		{errors.New("broken"), 500, "api_error"},
	} {
		status, e := anthErrorOf(tc.err)
		if status != tc.status || e.Type != tc.typ || e.Message != tc.err.Error() {
			t.Errorf("%v: %d %+v; want %d %s", tc.err, status, e, tc.status, tc.typ)
		}
	}
}

// TestAnthropicPings: a stream that goes anthPingEvery without an event
// gets a ping, wherever it is, and the events around the pings keep their
// order. With the interval at a microsecond, a reply of 100 tokens gets
// pings besides the first (without the pinger it gets that one alone).
func TestAnthropicPings(t *testing.T) {
	every := anthPingEvery
	anthPingEvery = time.Microsecond
	t.Cleanup(func() { anthPingEvery = every })
	data, err := os.ReadFile(fixtures.Model(t, "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "stories.gguf"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	reg := NewLibraryRegistry(nil)
	reg.Dirs = []string{dir}
	srv := New(Config{Registry: reg, Version: "test", Load: runner.LoadOptions{NumCtx: 256}})
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Close() })
	body := `{"model":"stories","max_tokens":100,"stream":true,"temperature":0,"messages":[{"role":"user","content":"Once upon a time"}]}`
	resp, err := http.Post(hs.URL+"/v1/messages", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var events []string
	pings := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: "))
		if !ok {
			continue
		}
		var ev struct {
			Type  string `json:"type"`
			Delta struct {
				Type string `json:"type"`
			} `json:"delta"`
		}
		if err := json.Unmarshal(data, &ev); err != nil {
			t.Fatalf("data %q: %v", data, err)
		}
		switch {
		case ev.Type == "ping":
			pings++
		case ev.Type == "content_block_delta" && (len(events) == 0 || events[len(events)-1] != ev.Delta.Type):
			events = append(events, ev.Delta.Type)
		case ev.Type != "content_block_delta":
			events = append(events, ev.Type)
		}
	}
	want := []string{"message_start", "content_block_start", "text_delta", "content_block_stop", "message_delta", "message_stop"}
	if !slices.Equal(events, want) || pings < 2 {
		t.Errorf("events %v with %d pings; want %v and pings besides the first", events, pings, want)
	}
}
