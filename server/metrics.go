package server

import (
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"folio/runner"
)

// GET /metrics serves the Prometheus text format, one series per loaded
// model (label model_name). The names follow vLLM's (vllm:X is folio:X)
// where vLLM has the figure, so that dashboards and the Gateway API
// Inference Extension's endpoint picker, which scrapes model servers for
// queued requests and K/V cache utilization, read folio as they read
// vLLM (README's table gives the picker's flags).
//
// Gauges are read from the engines at scrape time (runner.EngineStats,
// store.KVStats), so they are exactly what the scheduler sees; counters
// and histograms add up each request's runner.Stats as it ends
// (EngineOptions.Finished), so they survive a model's reload.

// Histogram buckets, in seconds: a first token from a millisecond (a
// cached prompt on a GPU) to minutes (a long prompt on a CPU); a token
// from a millisecond to seconds.
var (
	ttftBuckets = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}
	tpotBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1, 2.5, 5}
)

// promMetrics is the server's Prometheus registry. The vectors are safe for
// concurrent use; m reads the manager's models under its lock.
type promMetrics struct {
	m   *manager
	reg *prometheus.Registry

	promptTokens, generationTokens *prometheus.CounterVec
	prefixQueries, prefixHits      *prometheus.CounterVec
	storeHits                      *prometheus.CounterVec
	preemptions                    *prometheus.CounterVec
	ttft, tpot                     *prometheus.HistogramVec

	running, waiting, kvUsage, storeBytes *prometheus.Desc
	// the shared tier's, for the whole server (FOLIO_KV_REMOTE)
	remoteHits, remoteRejected, remoteFailed *prometheus.Desc

	// afterFinished, set by tests before a model loads, runs after a
	// request's figures are added, on its engine's loop goroutine (so
	// that blocking in it holds the engine between steps).
	afterFinished func()
}

func newMetrics(m *manager) *promMetrics {
	label := []string{"model_name"}
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, label)
	}
	gauge := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, label, nil) }
	x := &promMetrics{m: m, reg: prometheus.NewRegistry(),
		promptTokens:     counter("folio:prompt_tokens_total", "Prompt tokens of finished requests, cached ones included."),
		generationTokens: counter("folio:generation_tokens_total", "Tokens generated, all samples."),
		prefixQueries:    counter("folio:prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache (every prompt token)."),
		prefixHits:       counter("folio:prefix_cache_hits_total", "Prompt tokens whose K/V came from the prefix cache (memory or persisted store) and were not computed."),
		storeHits:        counter("folio:kv_store_hits_total", "Prompt tokens whose K/V was restored from the persisted store (a subset of prefix_cache_hits)."),
		preemptions:      counter("folio:num_preemptions_total", "Times a running request was preempted to free K/V blocks (it is recomputed)."),
		ttft: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "folio:time_to_first_token_seconds",
			Help: "From a request's arrival at the engine to its first token, queueing included.", Buckets: ttftBuckets}, label),
		tpot: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "folio:time_per_output_token_seconds",
			Help: "A request's mean time per generated token after the first.", Buckets: tpotBuckets}, label),
		running:    gauge("folio:num_requests_running", "Sequences computing their prompt or generating now."),
		waiting:    gauge("folio:num_requests_waiting", "Requests queued for admission, preempted ones included."),
		kvUsage:    gauge("folio:kv_cache_usage_perc", "Fraction (0 to 1) of the K/V cache blocks that running requests hold; cached prefixes no request holds are free to evict and not counted."),
		storeBytes: gauge("folio:kv_store_bytes", "Bytes of K/V blocks of this model in the persisted prefix store."),
		remoteHits: prometheus.NewDesc("folio:kv_remote_hits_total", "K/V blocks restored from the shared tier (FOLIO_KV_REMOTE), all models.", nil, nil),
		remoteRejected: prometheus.NewDesc("folio:kv_remote_rejected_total",
			"Blocks from the shared tier that failed verification (HMAC, fingerprint, tokens, checksum) and were recomputed.", nil, nil),
		remoteFailed: prometheus.NewDesc("folio:kv_remote_errors_total", "Calls to the shared tier that failed or passed their deadline.", nil, nil),
	}
	x.reg.MustRegister(x.promptTokens, x.generationTokens, x.prefixQueries, x.prefixHits, x.storeHits,
		x.preemptions, x.ttft, x.tpot, x)
	return x
}

// finished is the EngineOptions.Finished of model's engine.
func (x *promMetrics) finished(model string) func(runner.Stats) {
	prompt, gen := x.promptTokens.WithLabelValues(model), x.generationTokens.WithLabelValues(model)
	queries, hits, store := x.prefixQueries.WithLabelValues(model), x.prefixHits.WithLabelValues(model), x.storeHits.WithLabelValues(model)
	preempt := x.preemptions.WithLabelValues(model)
	ttft, tpot := x.ttft.WithLabelValues(model), x.tpot.WithLabelValues(model)
	return func(st runner.Stats) {
		n := st.PromptTokens + st.CachedTokens
		prompt.Add(float64(n))
		queries.Add(float64(n))
		hits.Add(float64(st.CachedTokens))
		store.Add(float64(st.RestoredTokens))
		gen.Add(float64(st.EvalTokens))
		preempt.Add(float64(st.Preemptions))
		if st.EvalTokens > 0 { // it sampled a token
			ttft.Observe((st.QueueDuration + st.PromptDuration).Seconds())
		}
		if st.EvalTokens > 1 {
			tpot.Observe(st.EvalDuration.Seconds() / float64(st.EvalTokens-1))
		}
		if x.afterFinished != nil {
			x.afterFinished()
		}
	}
}

// Describe and Collect make metrics the collector of the gauges.
func (x *promMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- x.running
	ch <- x.waiting
	ch <- x.kvUsage
	ch <- x.storeBytes
	ch <- x.remoteHits
	ch <- x.remoteRejected
	ch <- x.remoteFailed
}

func (x *promMetrics) Collect(ch chan<- prometheus.Metric) {
	if x.m.cfg.Store != nil {
		if st, ok := x.m.cfg.Store.RemoteStats(); ok {
			ch <- prometheus.MustNewConstMetric(x.remoteHits, prometheus.CounterValue, float64(st.Hits))
			ch <- prometheus.MustNewConstMetric(x.remoteRejected, prometheus.CounterValue, float64(st.Rejected))
			ch <- prometheus.MustNewConstMetric(x.remoteFailed, prometheus.CounterValue, float64(st.Failed))
		}
	}
	for _, l := range x.m.running() {
		name := l.entry.Name
		st := l.engine.Stats()
		ch <- prometheus.MustNewConstMetric(x.running, prometheus.GaugeValue, float64(st.Running), name)
		ch <- prometheus.MustNewConstMetric(x.waiting, prometheus.GaugeValue, float64(st.Queued), name)
		usage := 0.0
		if st.Blocks > 0 {
			usage = min(1, float64(st.ActiveBlocks)/float64(st.Blocks))
		}
		ch <- prometheus.MustNewConstMetric(x.kvUsage, prometheus.GaugeValue, usage, name)
		if fp := l.engine.Fingerprint(); fp != "" && x.m.cfg.Store != nil {
			ch <- prometheus.MustNewConstMetric(x.storeBytes, prometheus.GaugeValue, float64(x.m.cfg.Store.KVStats(fp).Bytes), name)
		}
	}
}

func (x *promMetrics) handler() http.Handler {
	return promhttp.HandlerFor(x.reg, promhttp.HandlerOpts{})
}

// MetricsHandler serves GET /metrics alone, through the same guard and
// access log as the API: for FOLIO_METRICS_ADDR, a second address that
// a scraper may reach without reaching the API.
func (s *Server) MetricsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			writeError(w, fmt.Errorf("%w: %s %s: this address serves GET /metrics only", errNotFoundPath, r.Method, r.URL.Path))
			return
		}
		s.ServeHTTP(w, r)
	})
}
