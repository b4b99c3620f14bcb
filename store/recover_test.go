package store

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"folio/internal/fixtures"
)

// logBuf collects log lines; the writer goroutine logs too.
type logBuf struct{ fixtures.LockedBuffer }

func (l *logBuf) lines(substr string) []string {
	var out []string
	for _, line := range strings.Split(l.String(), "\n") {
		if strings.Contains(line, substr) {
			out = append(out, line)
		}
	}
	return out
}

func newLog() (*slog.Logger, *logBuf) {
	var b logBuf
	return slog.New(slog.NewTextHandler(&b, nil)), &b
}

// fillHome makes a home with one model and n blocks of 16 KiB, closed.
func fillHome(t *testing.T, n int) string {
	t.Helper()
	home := t.TempDir()
	reg := openRegistryTest(t, home, RegistryOptions{})
	if err := reg.PutModel(Model{Name: "keep", Digest: "sha256:cc"}); err != nil {
		t.Fatal(err)
	}
	s, err := OpenKV(home, KVOptions{MaxBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		save(s, testFP, makeBlock(i, 16<<10))
	}
	if err := errors.Join(s.Close(), reg.Close()); err != nil {
		t.Fatal(err)
	}
	return home
}

func truncateHalf(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
}

// TestTruncatedKVCache: a kvcache.db cut to half its size is moved aside
// with one log line; the store opens with an empty cache that works, and
// folio.db is not touched.
func TestTruncatedKVCache(t *testing.T) {
	home := fillHome(t, 64)
	kvPath, regPath := filepath.Join(home, kvFile), filepath.Join(home, registryFile)
	truncateHalf(t, kvPath)
	regBefore, err := os.ReadFile(regPath)
	if err != nil {
		t.Fatal(err)
	}

	log, logs := newLog()
	s := openTest(t, home, KVOptions{MaxBytes: 1 << 30, Log: log})
	if lines := logs.lines("kvcache.db"); len(lines) != 1 || !strings.Contains(lines[0], "moved it aside") {
		t.Fatalf("log lines about kvcache.db: %q, want one", lines)
	}
	if st := s.KVStats(""); st.Blocks != 0 {
		t.Fatalf("KVStats after recovery = %+v, want empty", st)
	}
	if n := s.HasBlocks(testFP, hashes(makeBlock(0, 16<<10))); n != 0 {
		t.Fatalf("HasBlocks after recovery = %d", n)
	}
	aside, _ := filepath.Glob(kvPath + ".corrupt-*")
	if len(aside) != 1 {
		t.Fatalf("files moved aside: %v, want kvcache.db.corrupt-<time>", aside)
	}
	if m, err := openRegistryTest(t, home, RegistryOptions{}).Model("keep"); err != nil || m.Digest != "sha256:cc" {
		t.Fatalf("registry after K/V recovery: %+v, %v", m, err)
	}
	b := makeBlock(100, 16<<10)
	save(s, testFP, b)
	s.Flush()
	if err := load(s, testFP, b); err != nil {
		t.Fatalf("the fresh cache: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	regAfter, _ := os.ReadFile(regPath)
	if !bytes.Equal(regBefore, regAfter) {
		t.Fatal("folio.db changed")
	}
}

// TestGarbageKVCache: a kvcache.db that is not a database at all is
// replaced the same way; of three recoveries an hour apart only the
// newest copy stays aside, and an Open more than 7 days after it removes
// that one too.
func TestGarbageKVCache(t *testing.T) {
	home := fillHome(t, 4)
	kvPath := filepath.Join(home, kvFile)
	clk := newClock()
	for range 3 {
		clk.Add(time.Hour)
		if err := os.WriteFile(kvPath, bytes.Repeat([]byte("not sqlite "), 1000), 0o600); err != nil {
			t.Fatal(err)
		}
		log, logs := newLog()
		s, err := OpenKV(home, KVOptions{MaxBytes: 1 << 30, Log: log, Now: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		if n := len(logs.lines("moved it aside")); n != 1 {
			t.Fatalf("%d recovery log lines, want 1", n)
		}
	}
	newest := fmt.Sprintf("%s.corrupt-%d", kvPath, clk.Now().Unix())
	if aside, _ := filepath.Glob(kvPath + ".corrupt-*"); len(aside) != 1 || aside[0] != newest {
		t.Fatalf("files aside: %v, want %s", aside, newest)
	}

	for _, c := range []struct {
		after time.Duration
		left  int
	}{{6 * 24 * time.Hour, 1}, {2 * 24 * time.Hour, 0}} {
		clk.Add(c.after)
		log, logs := newLog()
		openTest(t, home, KVOptions{MaxBytes: 1 << 30, Log: log, Now: clk.Now}).Close()
		if aside, _ := filepath.Glob(kvPath + ".corrupt-*"); len(aside) != c.left {
			t.Fatalf("files aside %v after the copy was made: %v, want %d", clk.Now().Sub(time.Unix(1_700_000_000, 0)), aside, c.left)
		}
		if n := len(logs.lines("more than 7 days ago")); n != 1-c.left {
			t.Fatalf("%d log lines about removing the copy, want %d", n, 1-c.left)
		}
	}
}

// TestCorruptBlocksLogged: blocks that fail verification are recomputed
// with one warning however many there are, counted in KVStats.Corrupt,
// and Close reports the count.
func TestCorruptBlocksLogged(t *testing.T) {
	log, logs := newLog()
	s := openTest(t, "", KVOptions{MaxBytes: 1 << 30, Log: log})
	bs := []block{makeBlock(0, 4096), makeBlock(1, 4096), makeBlock(2, 4096)}
	for _, b := range bs {
		save(s, testFP, b)
	}
	s.Flush()
	if _, err := s.kv.Exec("UPDATE kv_data SET data = zeroblob(4096)"); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second round finds them deleted: not found, not corrupt
		for _, b := range bs {
			if err := load(s, testFP, b); err == nil {
				t.Fatal("a damaged block loaded")
			}
		}
	}
	if lines := logs.lines("failed verification"); len(lines) != 1 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], "checksum mismatch") {
		t.Fatalf("log lines about damaged blocks: %q, want one warning naming the cause", lines)
	}
	if st := s.KVStats(""); st.Corrupt != 3 || st.Blocks != 0 {
		t.Fatalf("KVStats = %+v, want 3 corrupt, 0 stored", st)
	}
	s.Close()
	if lines := logs.lines("since start"); len(lines) != 1 || !strings.Contains(lines[0], "blocks=3") {
		t.Fatalf("Close's log lines: %q, want one with blocks=3", lines)
	}
}

// TestDamagedMarker: once SQLite reported the cache file damaged at run
// time, the next Open replaces it.
func TestDamagedMarker(t *testing.T) {
	home := fillHome(t, 4)
	s := openTest(t, home, KVOptions{MaxBytes: 1 << 30})
	s.markDamaged(errors.New("database disk image is malformed"))
	s.Close()
	log, logs := newLog()
	s = openTest(t, home, KVOptions{MaxBytes: 1 << 30, Log: log})
	if st := s.KVStats(""); st.Blocks != 0 || len(logs.lines("moved it aside")) != 1 {
		t.Fatalf("after the marker: %+v, logs %q", st, logs.lines(""))
	}
	if fileExists(filepath.Join(home, kvFile+damagedSuffix)) {
		t.Fatal("marker left behind")
	}
}

// TestCorruptRegistry: a damaged folio.db is an error naming the file
// and what to do; the file is left as it was, and nothing is moved.
func TestCorruptRegistry(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, path string)
	}{
		{"garbage", func(t *testing.T, path string) {
			if err := os.WriteFile(path, bytes.Repeat([]byte{0xa5}, 8192), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"truncated", func(t *testing.T, path string) {
			s, err := OpenRegistry(filepath.Dir(path), RegistryOptions{})
			if err != nil {
				t.Fatal(err)
			}
			// Enough models for folio.db to span many pages.
			for i := range 200 {
				s.PutModel(Model{Name: strings.Repeat("m", 100) + string(rune('a'+i%26)) + strings.Repeat("x", i), Template: strings.Repeat("t", 500)})
			}
			s.Close()
			truncateHalf(t, path)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			home := t.TempDir()
			path := filepath.Join(home, registryFile)
			c.damage(t, path)
			before, _ := os.ReadFile(path)
			s, err := OpenRegistry(home, RegistryOptions{})
			if err == nil {
				s.Close()
				t.Fatal("OpenRegistry of a damaged folio.db succeeded")
			}
			msg := err.Error()
			for _, want := range []string{path, "damaged", "backup", "move it aside"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not mention %q", msg, want)
				}
			}
			after, _ := os.ReadFile(path)
			if !bytes.Equal(before, after) {
				t.Error("folio.db changed")
			}
			if aside, _ := filepath.Glob(path + ".*"); len(aside) != 0 {
				t.Errorf("files next to folio.db: %v", aside)
			}
		})
	}
}
