package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"folio/internal/fixtures"
	"folio/runner"
)

// scrape GETs /metrics from url and parses it with Prometheus's own text
// parser.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET /metrics: %s %q: %s", resp.Status, resp.Header.Get("Content-Type"), body)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("the scrape does not parse as Prometheus text: %v", err)
	}
	return fams
}

// value is the value of family name's series for model (a gauge or a
// counter; a histogram's sample count), and whether it is there.
func value(fams map[string]*dto.MetricFamily, name, model string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
	for _, m := range f.Metric {
		for _, l := range m.Label {
			if l.GetName() == "model_name" && l.GetValue() == model {
				switch {
				case m.Gauge != nil:
					return m.Gauge.GetValue(), true
				case m.Counter != nil:
					return m.Counter.GetValue(), true
				case m.Histogram != nil:
					return float64(m.Histogram.GetSampleCount()), true
				}
			}
		}
	}
	return 0, false
}

// TestMetricsGaugesMove holds the engine between steps (a request's end
// blocks in the metrics hook) and scrapes: requests submitted while it is
// held are waiting; after the hold, two run (MaxSeqs 2) and the K/V cache
// is partly in use; at the end nothing runs or waits and the K/V usage is
// 0 although the prefix cache holds their prompts. The counters and
// histograms then equal the sums of the responses' own figures.
func TestMetricsGaugesMove(t *testing.T) {
	data, err := os.ReadFile(fixtures.Model(t, "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "s.gguf"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	reg := NewLibraryRegistry(nil)
	reg.Dirs = []string{dir}
	srv := New(Config{Registry: reg, Version: "test", Load: runner.LoadOptions{NumCtx: 512, MaxSeqs: 2},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Close() })

	// arm(release) makes the next request to end hold the engine until
	// release is closed; held says it is holding.
	armed, held, stop := make(chan chan struct{}, 1), make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(stop) }) // before the server closes: a failed test leaves no hold
	srv.models.metrics.afterFinished = func() {
		select {
		case release := <-armed:
			select {
			case held <- struct{}{}:
			case <-stop:
			}
			select {
			case <-release:
			case <-stop:
			}
		default:
		}
	}
	type result struct {
		PromptEvalCount   int `json:"prompt_eval_count"`
		PromptCachedCount int `json:"prompt_cached_count"`
		EvalCount         int `json:"eval_count"`
		err               error
	}
	results := make(chan result, 8)
	prompt := strings.Repeat("Once upon a time there was a little girl who liked to play in the park. ", 4)
	generate := func(extra string, numPredict int) {
		body, _ := json.Marshal(map[string]any{"model": "s", "prompt": prompt + extra, "raw": true, "stream": false,
			"options": map[string]any{"num_predict": numPredict, "temperature": 0}})
		go func() {
			var r result
			resp, err := http.Post(hs.URL+"/api/generate", "application/json", bytes.NewReader(body))
			if err == nil {
				if resp.StatusCode != http.StatusOK {
					b, _ := io.ReadAll(resp.Body)
					err = &httpError{resp.Status, string(b)}
				} else {
					err = json.NewDecoder(resp.Body).Decode(&r)
				}
				resp.Body.Close()
			}
			r.err = err
			results <- r
		}()
	}
	gauges := func() (running, waiting, usage float64) {
		fams := scrape(t, hs.URL)
		var ok [3]bool
		running, ok[0] = value(fams, "folio:num_requests_running", "s:latest")
		waiting, ok[1] = value(fams, "folio:num_requests_waiting", "s:latest")
		usage, ok[2] = value(fams, "folio:kv_cache_usage_perc", "s:latest")
		if ok != [3]bool{true, true, true} {
			var names []string
			for n, f := range fams {
				names = append(names, fmt.Sprint(n, f.Metric))
			}
			t.Fatalf("the scrape lacks a gauge of model s (running, waiting, usage present: %v): %v", ok, names)
		}
		return running, waiting, usage
	}
	waitFor := func(what string, cond func(running, waiting, usage float64) bool) {
		t.Helper()
		var r, w, u float64
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if r, w, u = gauges(); cond(r, w, u) {
				return
			}
		}
		t.Fatalf("%s: never seen; last scrape running %v, waiting %v, kv usage %v", what, r, w, u)
	}

	if fams := scrape(t, hs.URL); len(fams["folio:num_requests_running"].GetMetric()) != 0 {
		t.Fatalf("series before any model loaded: %v", fams["folio:num_requests_running"])
	}
	hold1 := make(chan struct{})
	armed <- hold1
	generate("", 1) // loads the model, then holds the engine as it ends
	<-held
	// queued while the engine is held, one at a time, so that they are
	// admitted in this order: b (long) and e (one token) run together
	generate(" b", 200)
	waitFor("1 waiting", func(r, w, u float64) bool { return w == 1 })
	generate(" e", 1)
	waitFor("2 waiting", func(r, w, u float64) bool { return w == 2 })
	generate(" w1", 20)
	generate(" w2", 20)
	waitFor("4 waiting", func(r, w, u float64) bool { return w == 4 })
	if r, _, u := gauges(); r != 0 || u != 0 {
		t.Errorf("while held with nothing admitted: running %v, kv usage %v; want 0 and 0", r, u)
	}

	hold2 := make(chan struct{})
	armed <- hold2
	close(hold1)
	<-held // e ended; b runs, w1 and w2 wait for MaxSeqs
	if r, w, u := gauges(); r != 1 || w != 2 || !(u > 0 && u < 1) {
		t.Errorf("held with b running: running %v, waiting %v, kv usage %v; want 1, 2 and in (0, 1)", r, w, u)
	}
	close(hold2)

	var prompted, cached, gen, sampledMore float64
	for range 5 {
		r := <-results
		if r.err != nil {
			t.Fatal(r.err)
		}
		prompted += float64(r.PromptEvalCount)
		cached += float64(r.PromptCachedCount)
		gen += float64(r.EvalCount)
		if r.EvalCount > 1 {
			sampledMore++
		}
	}
	if cached == 0 {
		t.Fatal("no request reused a cached prefix: the test's prompts should share one")
	}
	waitFor("nothing running or waiting", func(r, w, u float64) bool { return r == 0 && w == 0 })
	if _, _, u := gauges(); u != 0 {
		t.Errorf("kv usage %v with nothing running (the prefix cache holds %d tokens, which are free to evict); want 0",
			u, srv.Engine("s:latest").CachedTokens())
	}
	fams := scrape(t, hs.URL)
	for _, c := range []struct {
		name string
		want float64
	}{
		{"folio:prompt_tokens_total", prompted},
		{"folio:prefix_cache_queries_total", prompted},
		{"folio:prefix_cache_hits_total", cached},
		{"folio:generation_tokens_total", gen},
		{"folio:time_to_first_token_seconds", 5},
		{"folio:time_per_output_token_seconds", sampledMore},
		{"folio:num_preemptions_total", 0},
		{"folio:kv_store_hits_total", 0},
	} {
		if got, ok := value(fams, c.name, "s:latest"); !ok || got != c.want {
			t.Errorf("%s = %v (present %v); want %v, the responses' sum", c.name, got, ok, c.want)
		}
	}
	for name, typ := range map[string]dto.MetricType{"folio:num_requests_running": dto.MetricType_GAUGE,
		"folio:prompt_tokens_total": dto.MetricType_COUNTER, "folio:time_to_first_token_seconds": dto.MetricType_HISTOGRAM} {
		if got := fams[name].GetType(); got != typ {
			t.Errorf("%s is a %v; want a %v", name, got, typ)
		}
	}
}

type httpError struct{ status, body string }

func (e *httpError) Error() string { return e.status + ": " + e.body }

// TestMetricsGuardAndSeparateAddress: /metrics passes the same guard as
// the API (a rebinding Host is refused), and MetricsHandler serves it
// alone.
func TestMetricsGuardAndSeparateAddress(t *testing.T) {
	srv := New(Config{Registry: NewLibraryRegistry(nil), Version: "test", Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	t.Cleanup(srv.Close)
	for _, c := range []struct {
		h      http.Handler
		path   string
		host   string
		status int
	}{
		{srv, "/metrics", "", http.StatusOK},
		{srv, "/metrics", "evil.example", http.StatusForbidden},
		{srv.MetricsHandler(), "/metrics", "", http.StatusOK},
		{srv.MetricsHandler(), "/metrics", "evil.example", http.StatusForbidden},
		{srv.MetricsHandler(), "/api/tags", "", http.StatusNotFound},
	} {
		hs := httptest.NewServer(c.h)
		req, _ := http.NewRequest("GET", hs.URL+c.path, nil)
		if c.host != "" {
			req.Host = c.host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		hs.Close()
		if resp.StatusCode != c.status {
			t.Errorf("GET %s (Host %q): %s; want %d", c.path, c.host, resp.Status, c.status)
		}
	}
}
