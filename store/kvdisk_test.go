package store

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// kvFilesSize is the bytes on disk of kvcache.db, -wal and -shm.
func kvFilesSize(t *testing.T, home string) int64 {
	t.Helper()
	var total int64
	for _, suffix := range []string{"", "-wal", "-shm"} {
		fi, err := os.Stat(filepath.Join(home, kvFile+suffix))
		if err == nil {
			total += fi.Size()
		} else if !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	return total
}

// TestKVFilesWithinBudget: with a 4 MiB budget and 12 MiB of blocks
// saved, kvcache.db with its -wal and -shm stays within 4 MiB after every
// write, and within 4 MiB plus 16 pages of 64 KiB (the metadata pages a
// batch writes to the WAL: 9 to 13 here) while a batch is written, as sampled by a goroutine
// that stats the files throughout.
func TestKVFilesWithinBudget(t *testing.T) {
	const (
		budget = 4 << 20
		slack  = 16 * kvPageSize
	)
	home := t.TempDir()
	s := openTest(t, home, KVOptions{MaxBytes: budget})
	var (
		wg   sync.WaitGroup
		stop = make(chan struct{})
		peak int64
	)
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			var n int64
			for _, suffix := range []string{"", "-wal", "-shm"} {
				if fi, err := os.Stat(filepath.Join(home, kvFile+suffix)); err == nil {
					n += fi.Size()
				}
			}
			peak = max(peak, n)
			time.Sleep(100 * time.Microsecond) // a sample, not a wait: leave the CPU to the writer
		}
	})
	const blocks = 200
	for i := range blocks {
		save(s, testFP, makeBlock(i, 60<<10))
		if i%4 == 3 {
			s.Flush()
			if n := kvFilesSize(t, home); n > budget {
				t.Fatalf("after %d blocks of 60 KiB the K/V files take %d bytes on disk, budget %d", i+1, n, budget)
			}
		}
	}
	close(stop)
	wg.Wait()
	if peak > budget+slack {
		t.Errorf("the K/V files reached %d bytes while writing, budget %d + %d", peak, budget, slack)
	}
	st := s.KVStats("")
	if st.Blocks == 0 || st.Blocks >= blocks || st.Dropped != 0 {
		t.Fatalf("KVStats = %+v: want some of the %d blocks kept, the rest evicted, none dropped", st, blocks)
	}
	if got := verifyAllBlocks(t, s); got != st.Blocks {
		t.Fatalf("%d blocks verify, the index has %d", got, st.Blocks)
	}
	t.Logf("%d blocks of 60 KiB kept in %d bytes (budget %d); peak while writing %d", st.Blocks, kvFilesSize(t, home), budget, peak)
}

// TestKVShrinksToLowerBudget: a cache filled under a 16 MiB budget and
// opened again under 2 MiB is evicted and rewritten to fit, with one log
// line, and its remaining blocks load.
func TestKVShrinksToLowerBudget(t *testing.T) {
	home := t.TempDir()
	s := openTest(t, home, KVOptions{MaxBytes: 16 << 20})
	for i := range 200 {
		save(s, testFP, makeBlock(i, 60<<10))
	}
	s.Close()
	if n := kvFilesSize(t, home); n < 8<<20 {
		t.Fatalf("the filled cache takes %d bytes, want more than 8 MiB", n)
	}
	log, logs := newLog()
	s = openTest(t, home, KVOptions{MaxBytes: 2 << 20, Log: log})
	s.Flush()
	if n := kvFilesSize(t, home); n > 2<<20 {
		t.Fatalf("after opening with a 2 MiB budget the K/V files take %d bytes", n)
	}
	if lines := logs.lines("shrank"); len(lines) != 1 {
		t.Errorf("log lines about shrinking: %q, want one", lines)
	}
	st := s.KVStats("")
	if got := verifyAllBlocks(t, s); got == 0 || got != st.Blocks {
		t.Fatalf("%d blocks verify, the index has %d: want the same, more than 0", got, st.Blocks)
	}
}

// TestKVMaxTooSmall: a budget below 1 MiB holds no block, and a negative
// one none at all; OpenKV says so (a caller without K/V persistence does
// not open the K/V store).
func TestKVMaxTooSmall(t *testing.T) {
	for _, max := range []int64{4000, -1} {
		_, err := OpenKV(t.TempDir(), KVOptions{MaxBytes: max})
		if want := "FOLIO_KV_STORE_MAX is " + strconv.FormatInt(max, 10) + " bytes"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("OpenKV with a budget of %d bytes: %v", max, err)
		}
	}
}
