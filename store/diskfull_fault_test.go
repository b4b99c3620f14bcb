package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"folio/internal/fixtures"
)

// A full disk under the write-behind path: SQLite fails the batch with
// "database or disk is full". Requests are not affected (blocks are
// dropped, prompts computed); one log line says what happened and what
// to free; nothing half-written is left, and writes resume once there is
// room.

// TestKVDiskFullSeam fills the database with SQLite's own limit
// (max_page_count), which fails writes exactly as a full disk does, so it
// runs everywhere.
func TestKVDiskFullSeam(t *testing.T) {
	log, logs := newLog()
	home := t.TempDir()
	reg := openRegistryTest(t, home, RegistryOptions{})
	s := openTest(t, home, KVOptions{MaxBytes: 1 << 40, Log: log})
	if err := reg.PutModel(Model{Name: "keep", Digest: "sha256:cc"}); err != nil {
		t.Fatal(err)
	}
	s.kv.SetMaxOpenConns(1) // the pragma is per connection
	var pages int
	if err := s.kv.QueryRow("PRAGMA page_count").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	setMaxPages := func(n int) {
		if _, err := s.kv.Exec(fmt.Sprintf("PRAGMA max_page_count = %d", n)); err != nil {
			t.Fatal(err)
		}
	}
	setMaxPages(pages + 12) // 768 KiB more: about 20 blocks of 32 KiB
	for i := range 64 {
		save(s, testFP, makeBlock(i, 32<<10))
		if i%4 == 3 {
			s.Flush()
		}
	}
	st := s.KVStats("")
	if st.Blocks == 0 || st.Dropped == 0 || st.Blocks+int(st.Dropped) != 64 {
		t.Fatalf("after filling: %+v; want some blocks stored and the rest dropped", st)
	}
	checkFullLog(t, logs)

	setMaxPages(1 << 30) // room again
	for i := 64; i < 68; i++ {
		save(s, testFP, makeBlock(i, 32<<10))
	}
	s.Flush()
	if got := s.KVStats("").Blocks; got != st.Blocks+4 {
		t.Errorf("after freeing space %d blocks are stored, want %d", got, st.Blocks+4)
	}
	if len(logs.lines("resumed")) != 1 {
		t.Errorf("no line says writes resumed")
	}
	reopenAndVerify(t, reg, s, home, st.Blocks+4)
}

// TestKVDiskFullTmpfs fills a real 2 MiB tmpfs; it needs the right to
// mount (root on Linux) and skips without it.
func TestKVDiskFullTmpfs(t *testing.T) {
	home, _ := fixtures.SmallDisk(t, "2m")
	filler := filepath.Join(home, "filler")
	if err := os.WriteFile(filler, make([]byte, 512<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	log, logs := newLog()
	reg := openRegistryTest(t, home, RegistryOptions{})
	s, err := OpenKV(home, KVOptions{MaxBytes: 1 << 40, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.PutModel(Model{Name: "keep", Digest: "sha256:cc"}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 64 && s.KVStats("").Dropped == 0; i++ {
		save(s, testFP, makeBlock(i, 64<<10))
		s.Flush()
	}
	st := s.KVStats("")
	if st.Dropped == 0 {
		t.Fatalf("4 MiB of blocks fit on a 2 MiB disk: %+v", st)
	}
	checkFullLog(t, logs)
	// the registry says so too
	err = reg.PutModel(Model{Name: "new", Template: strings.Repeat("x", 1<<20)})
	if err == nil || !strings.Contains(err.Error(), "is full: free disk space") {
		t.Errorf("PutModel on a full disk: %v", err)
	}
	s.Close()
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	s2 := openTest(t, home, KVOptions{MaxBytes: 1 << 40, Log: log})
	if lines := logs.lines("damaged"); len(lines) > 0 {
		t.Errorf("the full disk damaged kvcache.db: %q", lines)
	}
	reopenAndVerify(t, reg, s2, home, st.Blocks)
}

func checkFullLog(t *testing.T, logs *logBuf) {
	t.Helper()
	full := logs.lines("is full")
	if len(full) != 1 || !strings.Contains(full[0], "free disk space or lower FOLIO_KV_STORE_MAX") {
		t.Errorf("want one line saying the disk is full and what to free; got %q", full)
	}
	if other := logs.lines("write failed"); len(other) > 0 {
		t.Errorf("a full disk logged as another failure: %q", other)
	}
}

// reopenAndVerify closes reg and s, opens home's two stores again and
// checks both databases and every stored block (want of them), and the
// registry's model.
func reopenAndVerify(t *testing.T, reg *Registry, s *KVStore, home string, want int) {
	t.Helper()
	if err := errors.Join(s.Close(), reg.Close()); err != nil {
		t.Fatal(err)
	}
	reg = openRegistryTest(t, home, RegistryOptions{})
	s = openTest(t, home, KVOptions{MaxBytes: 1 << 40})
	if err := integrityCheck(s.kv); err != nil {
		t.Errorf("kvcache.db: %v", err)
	}
	if err := integrityCheck(reg.db); err != nil {
		t.Errorf("folio.db: %v", err)
	}
	if got := verifyAllBlocks(t, s); got != want {
		t.Errorf("%d blocks stored after reopening, want %d", got, want)
	}
	if _, err := reg.Model("keep"); err != nil {
		t.Errorf("the registry lost its model: %v", err)
	}
	if _, err := reg.Model("new"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a model whose write failed is registered: %v", err)
	}
}
