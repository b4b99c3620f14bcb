package store

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"folio/internal/fixtures"
)

const testRemoteKey = "a fleet's shared secret, 32 byte"

// openShared opens a KVStore in a fresh home with a shared tier at url
// under key; its log goes to log.
func openShared(t *testing.T, url, key string, log *fixtures.LockedBuffer, timeout time.Duration) *KVStore {
	t.Helper()
	lg := slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	r, err := OpenRemote(RemoteOptions{URL: url, Key: []byte(key), Log: lg, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	s, err := OpenKV(t.TempDir(), KVOptions{MaxBytes: 64 << 20, Log: lg, Remote: r})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestRemoteSharesBlocks: blocks one server saves reach another through
// Redis in one fetch, load byte for byte, and are kept in its own file.
func TestRemoteSharesBlocks(t *testing.T) {
	rd := fixtures.StartRedis(t)
	var log fixtures.LockedBuffer
	a := openShared(t, rd.URL(), testRemoteKey, &log, time.Second)
	b := openShared(t, rd.URL(), testRemoteKey, &log, time.Second)
	chain := []block{makeBlock(0, 4096), makeBlock(1, 4096), makeBlock(2, 4096)}
	for _, blk := range chain {
		save(a, testFP, blk)
	}
	a.Flush()
	if n := b.HasBlocks(testFP, hashes(chain...)); n != 0 {
		t.Fatalf("b's own file has %d blocks before any fetch", n)
	}
	// the chain and one block Redis does not have: the fetch stops there
	if n := b.FetchBlocks(testFP, hashes(append(chain, makeBlock(3, 4096))...)); n != 3 {
		t.Fatalf("FetchBlocks = %d; want the 3 blocks a saved", n)
	}
	for i, blk := range chain {
		if err := load(b, testFP, blk); err != nil {
			t.Fatalf("block %d: %v", i, err)
		}
	}
	b.Flush()
	if n := b.HasBlocks(testFP, hashes(chain...)); n != 3 {
		t.Errorf("b's file has %d of the 3 blocks it loaded from Redis; want all", n)
	}
	if st, _ := b.RemoteStats(); st.Hits != 3 || st.Rejected != 0 {
		t.Errorf("b's remote stats %+v; want 3 hits, none rejected", st)
	}
	if n := b.FetchBlocks("another model", hashes(chain...)); n != 0 {
		t.Errorf("another fingerprint fetched %d blocks; want 0", n)
	}
}

// TestRemoteRejectsTampered: a block altered in Redis (one flipped byte
// of its data, or of its token IDs), sealed under another key, or asked
// for with other tokens is never loaded: LoadBlock returns ErrCorrupt,
// the first is logged as a warning, and all are counted.
func TestRemoteRejectsTampered(t *testing.T) {
	rd := fixtures.StartRedis(t)
	var log fixtures.LockedBuffer
	a := openShared(t, rd.URL(), testRemoteKey, &log, time.Second)
	blk := makeBlock(0, 4096)
	save(a, testFP, blk)
	a.Flush()
	rdb := redis.NewClient(&redis.Options{Addr: rd.Addr})
	defer rdb.Close()
	ctx := context.Background()
	rkey := redisKey(key{testFP, blk.hash})
	good, err := rdb.Get(ctx, rkey).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	flip := func(at int) []byte {
		v := append([]byte(nil), good...)
		v[at] ^= 0x01
		return v
	}
	dataAt := strings.Index(string(good), string(blk.data[:64]))
	cases := []struct {
		name   string
		value  []byte
		key    string
		tokens []int32
		why    string
	}{
		{"flipped data byte", flip(dataAt + 100), testRemoteKey, blk.tokens, "HMAC"},
		{"flipped token byte", flip(dataAt - 8), testRemoteKey, blk.tokens, "HMAC"},
		{"wrong key", good, "another fleet's secret, 32 bytes", blk.tokens, "HMAC"},
		{"other tokens", good, testRemoteKey, makeBlock(1, 0).tokens, "token IDs"},
	}
	for i, c := range cases {
		if err := rdb.Set(ctx, rkey, c.value, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		b := openShared(t, rd.URL(), c.key, &log, time.Second)
		if n := b.FetchBlocks(testFP, hashes(blk)); n != 1 {
			t.Fatalf("%s: FetchBlocks = %d; want 1 (found, not yet verified)", c.name, n)
		}
		dst := make([]byte, len(blk.data))
		err := b.LoadBlock(testFP, blk.hash, c.tokens, dst)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: LoadBlock: %v; want ErrCorrupt naming %q", c.name, err, c.why)
		}
		if st, _ := b.RemoteStats(); st.Hits != 0 || st.Rejected != 1 {
			t.Errorf("%s: remote stats %+v; want 0 hits, 1 rejected", c.name, st)
		}
		b.Flush()
		if n := b.HasBlocks(testFP, hashes(blk)); n != 0 {
			t.Errorf("%s: the rejected block is in the local file", c.name)
		}
		if i == 0 && !strings.Contains(log.String(), "level=WARN msg=\"store: a block from the shared K/V tier failed verification") {
			t.Errorf("%s: no warning logged:\n%s", c.name, log.String())
		}
	}
	// the genuine block still loads
	if err := rdb.Set(ctx, rkey, good, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	b := openShared(t, rd.URL(), testRemoteKey, &log, time.Second)
	if n := b.FetchBlocks(testFP, hashes(blk)); n != 1 {
		t.Fatalf("genuine block: FetchBlocks = %d", n)
	}
	if err := load(b, testFP, blk); err != nil {
		t.Errorf("genuine block: %v", err)
	}
}

// TestRemoteDownOrSlow: with Redis blocked (DEBUG SLEEP) or killed, a
// fetch gives up at its deadline and counts nothing, saves return at
// once, and the store's own file keeps working; when Redis is back,
// sharing resumes.
func TestRemoteDownOrSlow(t *testing.T) {
	rd := fixtures.StartRedis(t)
	var log fixtures.LockedBuffer
	const deadline = 200 * time.Millisecond
	a := openShared(t, rd.URL(), testRemoteKey, &log, deadline)
	local := makeBlock(0, 4096)
	save(a, testFP, local)
	a.Flush()
	chain := []block{local, makeBlock(1, 4096)}

	slept := make(chan string)
	go func() { slept <- rd.Do("DEBUG", "SLEEP", "3") }()
	time.Sleep(100 * time.Millisecond) // let the sleep begin
	start := time.Now()
	n := a.FetchBlocks(testFP, hashes(chain...))
	took := time.Since(start)
	if n != 1 {
		t.Errorf("slow Redis: FetchBlocks = %d; want 1 (the local block)", n)
	}
	if took > 2*time.Second { // Redis answers after 3 s; the deadline is 200 ms
		t.Errorf("slow Redis: FetchBlocks took %v; the deadline is %v", took, deadline)
	}
	if err := load(a, testFP, local); err != nil {
		t.Errorf("slow Redis: the local block: %v", err)
	}
	<-slept

	rd.Kill()
	start = time.Now()
	for i := range 50 {
		save(a, testFP, makeBlock(10+i, 4096))
	}
	if n := a.FetchBlocks(testFP, hashes(chain...)); n != 1 {
		t.Errorf("Redis down: FetchBlocks = %d; want 1", n)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Redis down: 50 saves and a fetch took %v", took)
	}
	a.Flush()
	if st, _ := a.RemoteStats(); st.Failed == 0 || st.Dropped == 0 {
		t.Errorf("Redis down: stats %+v; want failed calls and dropped blocks counted", st)
	}
	if !strings.Contains(log.String(), "the shared K/V tier failed") {
		t.Errorf("Redis down: not logged:\n%s", log.String())
	}

	rd.Start()
	save(a, testFP, makeBlock(1, 4096))
	a.Flush()
	b := openShared(t, rd.URL(), testRemoteKey, &log, deadline)
	if n := b.FetchBlocks(testFP, hashes(makeBlock(1, 4096))); n != 1 {
		t.Errorf("Redis back: FetchBlocks = %d; want 1", n)
	}
}

// TestRemoteFull: a Redis at its memory limit that refuses writes
// (maxmemory with noeviction) drops the blocks it cannot take, counted
// and logged; the blocks it holds are still fetched.
func TestRemoteFull(t *testing.T) {
	rd := fixtures.StartRedis(t)
	var log fixtures.LockedBuffer
	a := openShared(t, rd.URL(), testRemoteKey, &log, time.Second)
	first := makeBlock(0, 64<<10)
	save(a, testFP, first)
	a.Flush()
	if got := rd.Do("CONFIG", "SET", "maxmemory-policy", "noeviction"); got != "+OK" {
		t.Fatal(got)
	}
	if got := rd.Do("CONFIG", "SET", "maxmemory", "1"); got != "+OK" { // below what it uses: every write is refused
		t.Fatal(got)
	}
	for i := 1; i <= 8; i++ {
		save(a, testFP, makeBlock(i, 64<<10))
	}
	a.Flush()
	if st, _ := a.RemoteStats(); st.Dropped != 8 || st.Failed == 0 {
		t.Errorf("full Redis: stats %+v; want the 8 blocks dropped and the failed writes counted", st)
	}
	if !strings.Contains(log.String(), "OOM") {
		t.Errorf("full Redis: Redis's refusal not logged:\n%s", log.String())
	}
	b := openShared(t, rd.URL(), testRemoteKey, &log, time.Second)
	if n := b.FetchBlocks(testFP, hashes(first, makeBlock(1, 64<<10))); n != 1 {
		t.Errorf("full Redis: FetchBlocks = %d; want 1, the block written before it filled", n)
	}
	if err := load(b, testFP, first); err != nil {
		t.Errorf("full Redis: %v", err)
	}
}
