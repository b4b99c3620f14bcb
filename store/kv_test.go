package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"
)

const testFP = "fp-test"

// block is a deterministic test block: i names it, n is its data size.
type block struct {
	hash, parent [32]byte
	tokens       []int32
	data         []byte
}

func makeBlock(i, n int) block {
	var b block
	b.hash = sha256.Sum256(binary.LittleEndian.AppendUint64(nil, uint64(i)))
	if i > 0 {
		b.parent = sha256.Sum256(binary.LittleEndian.AppendUint64(nil, uint64(i-1)))
	}
	for j := range 16 {
		b.tokens = append(b.tokens, int32(i*16+j))
	}
	b.data = make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(i), 7))
	for j := range b.data {
		b.data[j] = byte(r.Uint32())
	}
	return b
}

func save(s *KVStore, fp string, b block) {
	s.SaveBlock(fp, b.hash, b.parent, b.tokens, bytes.Clone(b.data), "f16")
}

func load(s *KVStore, fp string, b block) error {
	dst := make([]byte, len(b.data))
	if err := s.LoadBlock(fp, b.hash, b.tokens, dst); err != nil {
		return err
	}
	if !bytes.Equal(dst, b.data) {
		return errors.New("loaded data differ from saved data")
	}
	return nil
}

func hashes(bs ...block) [][32]byte {
	var hs [][32]byte
	for _, b := range bs {
		hs = append(hs, b.hash)
	}
	return hs
}

// rowCount is the number of rows in table (kv_blocks or kv_data).
func rowCount(t *testing.T, s *KVStore, table string) int {
	t.Helper()
	var n int
	if err := s.kv.QueryRow("SELECT count(*) FROM " + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func TestSaveLoadRoundTrip(t *testing.T) {
	s := openTest(t, "", KVOptions{MaxBytes: 1 << 30})
	b0, b1, b2 := makeBlock(0, 4096), makeBlock(1, 4096), makeBlock(2, 4096)
	save(s, testFP, b0)
	save(s, testFP, b1)
	s.Flush()

	if n := s.HasBlocks(testFP, hashes(b0, b1, b2)); n != 2 {
		t.Fatalf("HasBlocks = %d, want 2", n)
	}
	if n := s.HasBlocks(testFP, hashes(b1, b0)); n != 2 {
		t.Fatalf("HasBlocks(b1, b0) = %d, want 2", n)
	}
	if n := s.HasBlocks(testFP, hashes(b2, b0)); n != 0 {
		t.Fatalf("HasBlocks(b2, b0) = %d, want 0 (stops at the first missing)", n)
	}
	if n := s.HasBlocks("other", hashes(b0)); n != 0 {
		t.Fatalf("HasBlocks of another fingerprint = %d, want 0", n)
	}
	for _, b := range []block{b0, b1} {
		if err := load(s, testFP, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := load(s, testFP, b2); !errors.Is(err, ErrNotFound) {
		t.Fatalf("LoadBlock of an unsaved block: %v, want ErrNotFound", err)
	}
	if err := load(s, "other", b0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("LoadBlock under another fingerprint: %v, want ErrNotFound", err)
	}

	// Saving again is a no-op.
	save(s, testFP, b0)
	s.Flush()
	want := KVStats{Blocks: 2, Bytes: 2 * 4096, Tokens: 32}
	if st := s.KVStats(testFP); st != want {
		t.Fatalf("KVStats = %+v, want %+v", st, want)
	}
	if st := s.KVStats(""); st != want {
		t.Fatalf("KVStats(\"\") = %+v, want %+v", st, want)
	}
	if n := rowCount(t, s, "kv_blocks"); n != 2 {
		t.Fatalf("%d rows, want 2", n)
	}
}

// TestLoadRejects: a block whose tokens, length or bytes do not match is
// ErrCorrupt, forgotten at once and deleted by the next write.
func TestLoadRejects(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, s *KVStore, b *block) // makes the load fail
	}{
		{"token mismatch", func(t *testing.T, s *KVStore, b *block) {
			b.tokens = append([]int32(nil), b.tokens...)
			b.tokens[5]++
		}},
		{"short token list", func(t *testing.T, s *KVStore, b *block) { b.tokens = b.tokens[:15] }},
		{"length mismatch", func(t *testing.T, s *KVStore, b *block) { b.data = b.data[:len(b.data)-2] }},
		{"flipped data byte", func(t *testing.T, s *KVStore, b *block) {
			_, err := s.kv.Exec("UPDATE kv_data SET data = substr(data, 1, 100) || x'5a' || substr(data, 102)")
			if err != nil {
				t.Fatal(err)
			}
		}},
		{"flipped token byte", func(t *testing.T, s *KVStore, b *block) {
			b.tokens[0] ^= 1 << 20
			_, err := s.kv.Exec("UPDATE kv_blocks SET tokens = ?", encodeTokens(b.tokens))
			if err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := openTest(t, "", KVOptions{MaxBytes: 1 << 30})
			b := makeBlock(3, 1000)
			if b.data[100] == 0x5a {
				t.Fatal("test block already has the flipped byte")
			}
			save(s, testFP, b)
			s.Flush()
			c.damage(t, s, &b)
			if err := load(s, testFP, b); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("LoadBlock: %v, want ErrCorrupt", err)
			}
			if n := s.HasBlocks(testFP, hashes(b)); n != 0 {
				t.Fatalf("HasBlocks after ErrCorrupt = %d, want 0", n)
			}
			s.Flush()
			if n := rowCount(t, s, "kv_blocks"); n != 0 {
				t.Fatalf("%d kv_blocks rows after ErrCorrupt, want 0", n)
			}
			if n := rowCount(t, s, "kv_data"); n != 0 {
				t.Fatalf("%d kv_data rows after ErrCorrupt, want 0", n)
			}
			// Recomputed and saved again, it loads.
			good := makeBlock(3, 1000)
			save(s, testFP, good)
			s.Flush()
			if err := load(s, testFP, good); err != nil {
				t.Fatalf("after saving again: %v", err)
			}
		})
	}
}

// TestBudgetEvictsLRU: past the budget, the least recently used blocks
// go first, with last use from the injected clock: after every save or
// load the blocks stored are exactly the most recently used ones, the
// oldest having been evicted.
func TestBudgetEvictsLRU(t *testing.T) {
	const size = 60 << 10 // one 64 KiB page each; a 2 MiB budget holds about 20
	clk := newClock()
	s := openTest(t, "", KVOptions{MaxBytes: 2 << 20, Now: clk.Now})
	var (
		bs       []block
		lastUsed []time.Time // by the test's reckoning
		evicted  bool
	)
	check := func(when string) {
		t.Helper()
		order := make([]int, len(bs)) // most recently used first
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int { return lastUsed[b].Compare(lastUsed[a]) })
		var got []byte
		for _, i := range order {
			got = append(got, ".X"[s.HasBlocks(testFP, hashes(bs[i]))])
		}
		if k := bytes.IndexByte(got, '.'); k >= 0 && bytes.IndexByte(got[k:], 'X') >= 0 {
			t.Fatalf("%s: stored by last use, newest first: %s; want the newest stored, the oldest evicted", when, got)
		}
		evicted = evicted || bytes.IndexByte(got, '.') >= 0
		st := s.KVStats("")
		var total int64
		s.kv.QueryRow("SELECT bytes FROM kv_totals").Scan(&total)
		if n := bytes.Count(got, []byte("X")); st.Blocks != n || st.Bytes != int64(n)*size || total != st.Bytes || rowCount(t, s, "kv_data") != n {
			t.Fatalf("%s: KVStats %+v, kv_totals.bytes %d, %d kv_data rows; want %d blocks of %d bytes", when, st, total, rowCount(t, s, "kv_data"), n, size)
		}
	}
	for i := range 48 {
		clk.Add(time.Second)
		bs, lastUsed = append(bs, makeBlock(i, size)), append(lastUsed, clk.Now())
		save(s, testFP, bs[i])
		s.Flush()
		check(fmt.Sprintf("after saving block %d", i))
		if i%3 != 2 {
			continue
		}
		// Use the oldest stored block: it becomes the newest.
		oldest := -1
		for j := range bs {
			if s.HasBlocks(testFP, hashes(bs[j])) == 1 && (oldest < 0 || lastUsed[j].Before(lastUsed[oldest])) {
				oldest = j
			}
		}
		clk.Add(time.Second)
		if err := load(s, testFP, bs[oldest]); err != nil {
			t.Fatal(err)
		}
		lastUsed[oldest] = clk.Now()
		s.Flush()
		check(fmt.Sprintf("after loading block %d", oldest))
	}
	if !evicted {
		t.Fatal("48 blocks of 60 KiB fit in 2 MiB: nothing was evicted")
	}
	// A block larger than a write batch (1/16 of the budget) is never queued.
	big := makeBlock(99, 200<<10)
	save(s, testFP, big)
	s.Flush()
	if s.HasBlocks(testFP, hashes(big)) != 0 {
		t.Fatal("a block larger than a batch was stored")
	}
}

func TestReopenKeepsBlocks(t *testing.T) {
	home := t.TempDir()
	s, err := OpenKV(home, KVOptions{MaxBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	bs := []block{makeBlock(0, 5000), makeBlock(1, 5000), makeBlock(2, 5000)}
	for _, b := range bs {
		save(s, testFP, b)
	}
	// No Flush: Close writes the queue.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, home, KVOptions{MaxBytes: 1 << 30})
	if n := s.HasBlocks(testFP, hashes(bs...)); n != 3 {
		t.Fatalf("HasBlocks after reopen = %d, want 3", n)
	}
	for _, b := range bs {
		if err := load(s, testFP, b); err != nil {
			t.Fatal(err)
		}
	}
	if st := s.KVStats(testFP); st != (KVStats{Blocks: 3, Bytes: 15000, Tokens: 48}) {
		t.Fatalf("KVStats after reopen = %+v", st)
	}
}

// TestQueueFullDrops: SaveBlock never blocks; past QueueBytes it drops
// and counts.
func TestQueueFullDrops(t *testing.T) {
	s := openTest(t, "", KVOptions{MaxBytes: 1 << 30, QueueBytes: 3000})
	// 2000 bytes count against the bound as a batch being written would,
	// with no op for the writer to take and finish: the pushes below see
	// the bound whenever the writer runs. (A queued op could be taken and
	// written before the first push, which then fit: CI saw Dropped = 0.)
	s.q.mu.Lock()
	s.q.bytes += 2000
	s.q.mu.Unlock()
	s.SaveBlock(testFP, [32]byte{2}, [32]byte{}, []int32{1}, make([]byte, 2000), "f16")
	s.SaveBlock(testFP, [32]byte{3}, [32]byte{}, []int32{1}, make([]byte, 500), "f16")
	s.Flush()
	if st := s.KVStats(""); st.Dropped != 1 {
		t.Fatalf("Dropped = %d, want 1", st.Dropped)
	}
	if s.HasBlocks(testFP, [][32]byte{{2}}) != 0 || s.HasBlocks(testFP, [][32]byte{{3}}) != 1 {
		t.Fatal("the dropped block was written or the small one was not")
	}
}

func TestDefaultBudget(t *testing.T) {
	s := openTest(t, "", KVOptions{})
	free, err := FreeBytes(s.home)
	if err != nil {
		t.Skip(err)
	}
	if s.kvMax <= 0 || s.kvMax > maxDefaultKV || s.kvMax > free/10+(1<<30) {
		t.Fatalf("default budget %d with %d bytes free", s.kvMax, free)
	}
}
