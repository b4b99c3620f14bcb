package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"folio/internal/fixtures"
	"folio/models/gguf"
	"folio/models/synth"
	"folio/runner"
	"folio/server"
	"folio/store"
)

// The fleet tests run folio servers that share prefixes through a real
// redis-server, behind a real nginx (round robin), on loopback.

const fleetKey = "the fleet's shared secret 0123456789"

// fleetServer is one folio server of a test fleet.
type fleetServer struct {
	name string
	url  string
	addr string // host:port
	kv   *store.KVStore
	log  *fixtures.LockedBuffer
}

// writeFleetModel writes a tiny llama with an 8192-token context to dir.
func writeFleetModel(t *testing.T, dir string) {
	t.Helper()
	err := synth.WriteTiny(filepath.Join(dir, "fleet.gguf"), "llama", gguf.TypeQ8_0, 5, func(c *synth.Config) { c.Ctx = 8192 })
	if err != nil {
		t.Fatal(err)
	}
}

// startFleetServer serves the models of dir with a persisted store in its
// own home and, when redisURL is set, the shared tier under key. Every
// answer carries the header X-Fleet-Server: name.
func startFleetServer(t *testing.T, name, dir, redisURL, key string) *fleetServer {
	t.Helper()
	fs := &fleetServer{name: name, log: &fixtures.LockedBuffer{}}
	lg := slog.New(slog.NewTextHandler(fs.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var remote *store.RemoteKV
	if redisURL != "" {
		var err error
		// 5 s: a loaded CI machine is slow, and the slow Redis sleeps 20 s
		opt := store.RemoteOptions{URL: redisURL, Key: []byte(key), Log: lg, Timeout: 5 * time.Second}
		if remote, err = store.OpenRemote(opt); err != nil {
			t.Fatal(err)
		}
	}
	kv, err := store.OpenKV(t.TempDir(), store.KVOptions{MaxBytes: 256 << 20, Log: lg, Remote: remote})
	if err != nil {
		t.Fatal(err)
	}
	fs.kv = kv
	reg := server.NewLibraryRegistry(nil)
	reg.Dirs = []string{dir}
	srv := server.New(server.Config{Registry: reg, Store: kv, Version: "test", Log: lg,
		Load: runner.LoadOptions{NumCtx: 8192}})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Fleet-Server", name)
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { hs.Close(); srv.Close(); kv.Close() })
	fs.url = hs.URL
	fs.addr = strings.TrimPrefix(hs.URL, "http://")
	return fs
}

// genResult is what a test reads of /api/generate's answer.
type genResult struct {
	Response          string `json:"response"`
	PromptEvalCount   int    `json:"prompt_eval_count"`
	PromptCachedCount int    `json:"prompt_cached_count"`
	server            string
}

// generateAt asks url for a greedy raw completion of prompt.
func generateAt(url, prompt string, numPredict int) (genResult, error) {
	body, _ := json.Marshal(map[string]any{"model": "fleet", "prompt": prompt, "raw": true, "stream": false,
		"options": map[string]any{"num_predict": numPredict, "temperature": 0, "num_ctx": 8192}})
	resp, err := http.Post(url+"/api/generate", "application/json", bytes.NewReader(body))
	if err != nil {
		return genResult{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return genResult{}, fmt.Errorf("%s: %s", resp.Status, b)
	}
	var r genResult
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return r, err
	}
	r.server = resp.Header.Get("X-Fleet-Server")
	return r, nil
}

// fleetPrompt is about n tokens of text (the tiny model's vocabulary is
// bytes).
func fleetPrompt(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "Turn %d: the user asks about block %d of the shared cache. ", i, i*7%13)
	}
	return b.String()[:n]
}

// TestFleetTurnTwoOnOtherServer: turn 1 of a 4k-token conversation goes
// through nginx to one server, turn 2 to the other, which restores the
// history from Redis (prompt_cached_count >= 4000) and answers exactly as
// a server computing it cold. A server under another key, and any server
// after the blocks were altered in Redis, uses none of them (the answer
// is the cold one) and logs why; a server whose Redis sleeps computes the
// prompt and answers while Redis is still asleep.
func TestFleetTurnTwoOnOtherServer(t *testing.T) {
	rd := fixtures.StartRedis(t)
	dir := t.TempDir()
	writeFleetModel(t, dir)
	a := startFleetServer(t, "a", dir, rd.URL(), fleetKey)
	b := startFleetServer(t, "b", dir, rd.URL(), fleetKey)
	cold := startFleetServer(t, "cold", dir, "", "")
	lb := fixtures.StartNginx(t, a.addr, b.addr)

	turn1 := fleetPrompt(4200)
	r1, err := generateAt(lb, turn1, 8)
	if err != nil {
		t.Fatal(err)
	}
	a.kv.Flush()
	b.kv.Flush() // both written behind, whichever computed turn 1
	turn2 := turn1 + r1.Response + " Turn 2: and the next block?"
	r2, err := generateAt(lb, turn2, 8)
	if err != nil {
		t.Fatal(err)
	}
	if r1.server == "" || r2.server == r1.server {
		t.Fatalf("nginx sent turn 1 to %q and turn 2 to %q; the test needs them on different servers", r1.server, r2.server)
	}
	t.Logf("turn 1 on %s, turn 2 on %s: prompt_cached_count %d of %d", r1.server, r2.server, r2.PromptCachedCount, r2.PromptEvalCount)
	if r2.PromptCachedCount < 4000 {
		t.Errorf("turn 2 on server %s: prompt_cached_count %d of %d; want >= 4000 restored from Redis", r2.server, r2.PromptCachedCount, r2.PromptEvalCount)
	}
	want, err := generateAt(cold.url, turn2, 8)
	if err != nil {
		t.Fatal(err)
	}
	if want.PromptCachedCount != 0 {
		t.Fatalf("the cold server reused %d tokens", want.PromptCachedCount)
	}
	if r2.Response != want.Response {
		t.Errorf("turn 2 from Redis's K/V answered %q; computed cold, %q", r2.Response, want.Response)
	}

	// another fleet's key: nothing verifies, nothing is used
	other := startFleetServer(t, "other-key", dir, rd.URL(), "another fleet's secret, 0123456789")
	if r, err := generateAt(other.url, turn2, 8); err != nil || r.PromptCachedCount != 0 || r.Response != want.Response {
		t.Errorf("wrong key: %+v, %v; want nothing cached and %q", r, err, want.Response)
	}
	if !strings.Contains(other.log.String(), "HMAC does not verify") {
		t.Errorf("wrong key: no log of the rejected block:\n%s", other.log.String())
	}

	// every block altered in Redis: one flipped byte each
	rdb := redis.NewClient(&redis.Options{Addr: rd.Addr})
	defer rdb.Close()
	ctx := context.Background()
	keys, err := rdb.Keys(ctx, "folio:kv:*").Result()
	if err != nil || len(keys) < 250 {
		t.Fatalf("%d blocks in Redis (%v); want those of 4k tokens", len(keys), err)
	}
	for _, k := range keys {
		v, err := rdb.Get(ctx, k).Bytes()
		if err != nil {
			t.Fatal(err)
		}
		v[len(v)/2] ^= 0x20
		rdb.Set(ctx, k, v, 0)
	}
	flipped := startFleetServer(t, "flipped", dir, rd.URL(), fleetKey)
	if r, err := generateAt(flipped.url, turn2, 8); err != nil || r.PromptCachedCount != 0 || r.Response != want.Response {
		t.Errorf("flipped bytes: %+v, %v; want nothing cached and %q", r, err, want.Response)
	}
	if !strings.Contains(flipped.log.String(), "failed verification") {
		t.Errorf("flipped bytes: no log of the rejected block:\n%s", flipped.log.String())
	}

	// a Redis that does not answer: the request computes and returns
	// before Redis wakes up
	for _, k := range keys { // genuine blocks again, so that only the sleep stands in the way
		rdb.Del(ctx, k)
	}
	a.kv.Flush()
	slow := startFleetServer(t, "slow", dir, rd.URL(), fleetKey)
	var woke atomic.Bool
	asleep := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		close(asleep)
		rd.Do("DEBUG", "SLEEP", "20")
		woke.Store(true)
	}()
	<-asleep
	r, err := generateAt(slow.url, turn2, 8)
	if err != nil || r.Response != want.Response {
		t.Errorf("slow Redis: %+v, %v; want %q", r, err, want.Response)
	}
	if woke.Load() {
		t.Errorf("slow Redis: the answer came after Redis woke up (20 s): the request waited for it")
	}
	if !strings.Contains(slow.log.String(), "the shared K/V tier failed") {
		t.Errorf("slow Redis: not logged:\n%s", slow.log.String())
	}
	wg.Wait()
}

// TestFleetRedisKilledUnderLoad: 200 requests through nginx to two
// servers sharing a Redis that is killed after the first 50: none fails.
func TestFleetRedisKilledUnderLoad(t *testing.T) {
	rd := fixtures.StartRedis(t)
	dir := t.TempDir()
	writeFleetModel(t, dir)
	a := startFleetServer(t, "a", dir, rd.URL(), fleetKey)
	b := startFleetServer(t, "b", dir, rd.URL(), fleetKey)
	lb := fixtures.StartNginx(t, a.addr, b.addr)
	base := fleetPrompt(300)
	var (
		done   atomic.Int64
		failed atomic.Int64
		first  sync.Once
		errs   = make(chan error, 200)
		work   = make(chan int)
		wg     sync.WaitGroup
	)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				// eight conversations, each growing: prefixes to share
				p := base + strings.Repeat(fmt.Sprintf(" conversation %d, turn ...", i%8), 1+i/8)
				if _, err := generateAt(lb, p, 2); err != nil {
					failed.Add(1)
					errs <- fmt.Errorf("request %d: %w", i, err)
				}
				if done.Add(1) == 50 {
					first.Do(rd.Kill)
				}
			}
		}()
	}
	for i := range 200 {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := failed.Load(); n != 0 {
		t.Fatalf("%d of 200 requests failed with Redis killed", n)
	}
	a.kv.Flush()
	b.kv.Flush()
	if !strings.Contains(a.log.String()+b.log.String(), "the shared K/V tier failed") {
		t.Error("Redis's death went unlogged")
	}
	var hits float64
	for _, s := range []*fleetServer{a, b} {
		resp, err := http.Get(s.url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, line := range strings.Split(string(body), "\n") {
			var v float64
			if _, err := fmt.Sscanf(line, "folio:kv_remote_hits_total %g", &v); err == nil {
				hits += v
			}
		}
	}
	if hits == 0 {
		t.Error("folio:kv_remote_hits_total is 0 on both servers: the conversations shared nothing before Redis died")
	}
}
