package server_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"folio/installer"
	"folio/server"
)

// answerWithin bounds every wait of these tests: a fixed server answers in
// about a body window (a second at most here), an unfixed one never.
const answerWithin = 10 * time.Second

// pacedServer serves tiny.gguf and an installer home over TCP with cfg
// (its BodyTimeout and BodyMinBytes: the body pace), through a listener of
// at most maxConns connections (0: no cap) and hs's settings (nil: none).
// It returns the address and the home.
func pacedServer(t *testing.T, cfg server.Config, maxConns int, hs *http.Server) (string, string) {
	t.Helper()
	reg, st, _, home := tinyHome(t)
	cfg.Registry, cfg.Version, cfg.Install = reg, "test", &installer.Options{Home: home, Store: st}
	srv := server.New(cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if hs == nil {
		hs = &http.Server{}
	}
	hs.Handler = srv
	go hs.Serve(server.LimitListener(ln, maxConns, nil))
	t.Cleanup(func() { hs.Close(); srv.Close() })
	return ln.Addr().String(), home
}

// dribble sends method path announcing size bytes of body, then one body
// byte every pause until the connection fails (the server closed it, or
// the test ended).
func dribble(t *testing.T, addr, method, path string, size int, pause time.Duration) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{",
		method, path, size); err != nil {
		t.Fatal(err)
	}
	go func() {
		tick := time.NewTicker(pause)
		defer tick.Stop()
		for range tick.C {
			if _, err := c.Write([]byte(" ")); err != nil {
				return
			}
		}
	}()
	return c
}

// closedAfter reads c's answer and then expects the server to close c.
func closedAfter(t *testing.T, c net.Conn, what string) (*http.Response, []byte) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(answerWithin))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("%s: no answer within %v: %v", what, answerWithin, err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: reading the answer: %v", what, err)
	}
	if _, err := br.ReadByte(); err == nil {
		t.Fatalf("%s: the server sent more after the answer", what)
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("%s: the connection is still open %v after the answer", what, answerWithin)
	}
	return resp, body
}

// TestSlowBody: a body that arrives a byte at a time is cut after a body
// window with 408 in the format of its API, and its connection closed; one
// that the handler never reads holds its connection no longer; requests
// beside them are served meanwhile.
func TestSlowBody(t *testing.T) {
	addr, home := pacedServer(t, server.Config{BodyTimeout: 500 * time.Millisecond, BodyMinBytes: 1024}, 0,
		&http.Server{ReadHeaderTimeout: 500 * time.Millisecond})
	blob := "sha256:" + strings.Repeat("ab", 32)
	cases := []struct{ method, path string }{
		{"POST", "/api/generate"},
		{"POST", "/v1/chat/completions"},
		{"POST", "/api/blobs/" + blob},
		{"GET", "/api/tags"}, // answered without reading the body
	}
	conns := make([]net.Conn, len(cases))
	for i, c := range cases {
		conns[i] = dribble(t, addr, c.method, c.path, 100_000, 20*time.Millisecond)
	}
	for range 3 {
		if status, _, msg := call(t, "POST", "http://"+addr+"/api/show", `{"model": "tiny"}`, nil); status != http.StatusOK {
			t.Fatalf("/api/show beside slow bodies: %d %q", status, msg)
		}
	}
	for i, c := range cases {
		what := c.method + " " + c.path
		resp, body := closedAfter(t, conns[i], what)
		if c.method == "GET" {
			if resp.StatusCode != http.StatusOK {
				t.Errorf("%s: status %d, want 200", what, resp.StatusCode)
			}
			continue
		}
		var e struct{ Error json.RawMessage }
		if resp.StatusCode != http.StatusRequestTimeout || json.Unmarshal(body, &e) != nil {
			t.Fatalf("%s: %d %s; want 408 with a JSON error", what, resp.StatusCode, body)
		}
		var msg string
		if strings.HasPrefix(c.path, "/v1/") {
			var oai struct{ Message, Code string }
			json.Unmarshal(e.Error, &oai)
			if oai.Code != "request_timeout" {
				t.Errorf("%s: OpenAI error %s, want code request_timeout", what, e.Error)
			}
			msg = oai.Message
		} else {
			json.Unmarshal(e.Error, &msg)
		}
		if !strings.Contains(msg, "too slow") || !strings.Contains(msg, "1024 bytes") {
			t.Errorf("%s: error %q, want it to say the body was too slow and the pace", what, msg)
		}
	}
	if installer.HasBlob(home, blob) {
		t.Error("the cut upload was kept")
	}
}

// TestSteadyUpload: a blob upload that lasts many body windows is not cut
// while it keeps arriving, and one beside it that stalls is.
func TestSteadyUpload(t *testing.T) {
	addr, home := pacedServer(t, server.Config{BodyTimeout: time.Second, BodyMinBytes: 8 << 10}, 0, nil)
	stalled := dribble(t, addr, "POST", "/api/blobs/sha256:"+strings.Repeat("cd", 32), 1<<20, 50*time.Millisecond)

	const chunk, chunks = 16 << 10, 256 // 4 MiB, a chunk each 10 ms: 2.5 s or more, at 200 times the floor
	data := make([]byte, chunk*chunks)
	for i := range data {
		data[i] = byte(i * 7 / 5)
	}
	sum := sha256.Sum256(data)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	pr, pw := io.Pipe()
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for i := 0; i < chunks; i++ {
			<-tick.C
			if _, err := pw.Write(data[i*chunk : (i+1)*chunk]); err != nil {
				return
			}
		}
		pw.Close()
	}()
	start := time.Now()
	resp, err := http.Post("http://"+addr+"/api/blobs/"+digest, "application/octet-stream", pr)
	if err != nil {
		t.Fatalf("steady upload: %v", err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || !installer.HasBlob(home, digest) {
		t.Fatalf("steady upload of %d bytes over %v: %d %s; want 201 and the blob kept", len(data), time.Since(start), resp.StatusCode, msg)
	}
	if resp, _ := closedAfter(t, stalled, "stalled upload"); resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("stalled upload: status %d, want 408", resp.StatusCode)
	}
}

// TestAnswerOutlastsBodyWindow: the body's deadline ends with the body: an
// answer that takes many body windows (here a model load held for five)
// is not cut.
func TestAnswerOutlastsBodyWindow(t *testing.T) {
	const window = 200 * time.Millisecond
	addr, _ := pacedServer(t, server.Config{BodyTimeout: window, LoadModelHook: func(server.ModelEntry) {
		<-time.After(5 * window)
	}}, 0, nil)
	resp, err := http.Post("http://"+addr+"/api/generate", "application/json",
		strings.NewReader(`{"model": "tiny", "prompt": "hi", "options": {"num_predict": 3}}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var last struct {
		Done  bool
		Error string
	}
	for dec := json.NewDecoder(resp.Body); dec.More(); {
		if err := dec.Decode(&last); err != nil {
			t.Fatalf("reading the stream: %v", err)
		}
	}
	if resp.StatusCode != http.StatusOK || !last.Done {
		t.Fatalf("an answer of %v after a body window of %v: %d, last line %+v; want 200 and done", 5*window, window, resp.StatusCode, last)
	}
}

// TestConnectionCap: with the cap's clients connected a further one waits
// unanswered; as they leave it is answered, and the server serves on.
func TestConnectionCap(t *testing.T) {
	const max = 4
	opened := make(chan struct{}, 16*max)
	addr, _ := pacedServer(t, server.Config{}, max, &http.Server{ConnState: func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened <- struct{}{}
		}
	}})
	var held []net.Conn
	for range max { // each sends half a request line and waits
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprint(c, "GET /api/ver")
		held = append(held, c)
	}
	timeout := time.After(answerWithin)
	for i := range max {
		select {
		case <-opened:
		case <-timeout:
			t.Fatalf("%d of %d connections accepted", i, max)
		}
	}
	extra, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	fmt.Fprint(extra, "GET /api/version HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	extra.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	br := bufio.NewReader(extra)
	if _, err := br.ReadByte(); err == nil || len(opened) > 0 {
		t.Fatalf("with %d connections open a further one was accepted (read error %v)", max, err)
	} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("the waiting connection failed: %v", err)
	}
	held[0].Close()
	extra.SetReadDeadline(time.Now().Add(answerWithin))
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("after a connection closed, the waiting one: %v %v", resp, err)
	}
	resp.Body.Close()
	for _, c := range held[1:] {
		c.Close()
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: answerWithin}
	for i := range 3 * max { // more connections than the cap, one after another
		resp, err := client.Get("http://" + addr + "/api/version")
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("connection %d after the cap's clients left: %v %v", i, resp, err)
		}
		resp.Body.Close()
	}
}

// TestRedirectJSON: a path ServeMux redirects keeps its status and
// Location and gets a JSON body in the format of its API, not HTML.
func TestRedirectJSON(t *testing.T) {
	addr, _ := pacedServer(t, server.Config{}, 0, nil)
	for _, c := range []struct{ method, path, loc string }{
		{"GET", "//api/tags", "/api/tags"},
		{"GET", "/api/../api/tags", "/api/tags"},
		{"POST", "/api//generate", "/api/generate"},
		{"GET", "/v1", "/v1/"},
		{"GET", "/v1//models", "/v1/models"},
	} {
		t.Run(c.path, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr) // the path as written: an http.Client would clean it
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n", c.method, c.path)
			conn.SetReadDeadline(time.Now().Add(answerWithin))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			what := c.method + " " + c.path
			if resp.StatusCode != http.StatusTemporaryRedirect || resp.Header.Get("Location") != c.loc {
				t.Errorf("%s: %d to %q, want 307 to %s", what, resp.StatusCode, resp.Header.Get("Location"), c.loc)
			}
			var e struct{ Error json.RawMessage }
			if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") || json.Unmarshal(body, &e) != nil || e.Error == nil {
				t.Errorf("%s: %s %q, want a JSON error body", what, resp.Header.Get("Content-Type"), body)
				return
			}
			var msg string
			if strings.HasPrefix(c.loc, "/v1/") {
				var oai struct{ Message string }
				if err := json.Unmarshal(e.Error, &oai); err != nil {
					t.Errorf("%s: %s is not OpenAI's error object", what, e.Error)
				}
				msg = oai.Message
			} else if err := json.Unmarshal(e.Error, &msg); err != nil {
				t.Errorf("%s: %s is not Ollama's error string", what, e.Error)
			}
			if !strings.Contains(msg, c.loc) {
				t.Errorf("%s: error %q does not name %s", what, msg, c.loc)
			}
		})
	}
}
