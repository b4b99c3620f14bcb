package store

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"folio/models/gguf"
	"folio/models/synth"
	"folio/runner"
)

// The engine fault tests run the real write-behind path: a runner.Engine
// persisting every full block of its sequences into this package's Store.
// The child re-executes the test binary (TestEngineFaultChild) with
// $FOLIO_STORE_FAULT = "home|model".

const engineChildEnv = "FOLIO_STORE_FAULT"

// faultPrompt is request i's prompt: 300–600 tokens, the first 128
// shared by all requests (a common system prompt).
func faultPrompt(i int) []int32 {
	r := rand.New(rand.NewPCG(99, 0))
	p := []int32{1}
	for len(p) < 128 {
		p = append(p, int32(3+r.IntN(500)))
	}
	r = rand.New(rand.NewPCG(uint64(i), 1))
	for n := 300 + r.IntN(300); len(p) < n; {
		p = append(p, int32(3+r.IntN(500)))
	}
	return p
}

var greedy = runner.SampleOptions{RepeatPenalty: 1}

// faultModel writes the tiny synthetic llama into dir.
func faultModel(t testing.TB, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "tiny.gguf")
	if err := synth.WriteTiny(path, "llama", gguf.TypeQ8_0, 3); err != nil {
		t.Fatal(err)
	}
	return path
}

// generate runs one greedy request to its end and returns its tokens and
// how many prompt tokens came from the store.
func generate(e *runner.Engine, prompt []int32, n int) ([]int32, int, error) {
	st, err := e.Submit(context.Background(), runner.Request{Prompt: prompt, Sample: greedy, NumPredict: n})
	if err != nil {
		return nil, 0, err
	}
	var out []int32
	restored := 0
	for {
		ev, ok := st.Recv(context.Background())
		if !ok {
			return out, restored, nil
		}
		if ev.Token >= 0 {
			out = append(out, ev.Token)
		}
		if ev.Err != nil {
			return out, restored, ev.Err
		}
		if ev.Stats != nil {
			restored = ev.Stats.RestoredTokens
		}
	}
}

// TestEngineFaultChild is the process the engine fault tests kill: it
// serves requests for ever on an engine whose store persists every full
// block, printing "done i" after request i.
func TestEngineFaultChild(t *testing.T) {
	spec := os.Getenv(engineChildEnv)
	if spec == "" {
		t.Skip("the child of TestKillDuringEngineWriteBehind")
	}
	home, model, _ := strings.Cut(spec, "|")
	if _, err := OpenRegistry(home, RegistryOptions{}); err != nil { // held open, as serve holds it
		t.Fatal(err)
	}
	s, err := OpenKV(home, KVOptions{MaxBytes: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	m, err := runner.Load(model, runner.LoadOptions{NumCtx: 1024})
	if err != nil {
		t.Fatal(err)
	}
	e, err := runner.NewEngine(m, runner.EngineOptions{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		if _, _, err := generate(e, faultPrompt(i), 4); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("done %d %d\n", i, s.KVStats("").Blocks) // requests served; blocks committed
	}
}

// TestKillDuringEngineWriteBehind: an engine process killed (SIGKILL)
// while its blocks are being written behind leaves a store that opens,
// passes SQLite's integrity_check, holds only blocks whose checksums
// match, and restores prefixes into output equal to a cold run's.
func TestKillDuringEngineWriteBehind(t *testing.T) {
	home, model := t.TempDir(), faultModel(t, t.TempDir())
	child := exec.Command(os.Args[0], "-test.run=^TestEngineFaultChild$", "-test.count=1", "-test.timeout=5m")
	child.Env = append(os.Environ(), engineChildEnv+"="+home+"|"+model)
	child.Stderr = os.Stderr
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	// The kill comes after 13 requests and once some block is committed
	// (the child says so; its writes go on behind): on a loaded machine
	// the write-behind had sometimes committed nothing by request 13, and
	// the test found an empty store ("no block was persisted").
	done, committed := -1, 0
	for sc := bufio.NewScanner(stdout); (done < 12 || committed == 0) && done < 2000 && sc.Scan(); {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[0] != "done" {
			t.Fatalf("child said %q", sc.Text())
		}
		done, _ = strconv.Atoi(f[1])
		committed, _ = strconv.Atoi(f[2])
	}
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	child.Wait()
	if done < 12 {
		t.Fatalf("the child served %d requests before it stopped", done+1)
	}

	log, logs := newLog()
	reg := openRegistryTest(t, home, RegistryOptions{})
	s := openTest(t, home, KVOptions{MaxBytes: 1 << 40, Log: log})
	if lines := logs.lines("damaged"); len(lines) > 0 {
		t.Errorf("kvcache.db was damaged by the kill: %q", lines)
	}
	if err := integrityCheck(s.kv); err != nil {
		t.Errorf("kvcache.db: %v", err)
	}
	if err := integrityCheck(reg.db); err != nil {
		t.Errorf("folio.db: %v", err)
	}
	blocks := verifyAllBlocks(t, s)
	if blocks == 0 {
		t.Fatal("no block was persisted before the kill")
	}

	// Restore: a new engine over the store serves every prompt the child
	// finished, and one it was in the middle of, as a cold engine does.
	m, err := runner.Load(model, runner.LoadOptions{NumCtx: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	warm, err := runner.NewEngine(m, runner.EngineOptions{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	defer warm.Close()
	cold, err := runner.NewEngine(m, runner.EngineOptions{NoPrefixCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cold.Close()
	restoredAll := 0
	for i := range done + 2 {
		got, restored, err := generate(warm, faultPrompt(i), 4)
		if err != nil {
			t.Fatal(err)
		}
		want, _, err := generate(cold, faultPrompt(i), 4)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("prompt %d: restored %d tokens and generated %v; cold %v", i, restored, got, want)
		}
		restoredAll += restored
	}
	if restoredAll == 0 {
		t.Error("no prompt restored a block from the store")
	}
	t.Logf("killed after %d requests: %d blocks stored, all verified; %d prompt tokens restored", done+1, blocks, restoredAll)
}

// integrityCheck runs PRAGMA integrity_check (the full one: every page,
// the blocks' overflow pages included), which answers one row, "ok", or
// the problems found.
func integrityCheck(db *sql.DB) error {
	var first string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&first); err != nil {
		return err
	}
	if first != "ok" {
		return fmt.Errorf("integrity_check: %s", first)
	}
	return nil
}

// verifyAllBlocks loads every stored block through LoadBlock (tokens,
// length and checksum verified) and returns how many there are.
func verifyAllBlocks(t *testing.T, s *KVStore) int {
	t.Helper()
	rows, err := s.kv.Query("SELECT fingerprint, hash, tokens, bytes FROM kv_blocks")
	if err != nil {
		t.Fatal(err)
	}
	type stored struct {
		fp     string
		hash   [32]byte
		tokens []int32
		n      int
	}
	var all []stored
	for rows.Next() {
		var (
			b          stored
			hash, toks []byte
		)
		if err := rows.Scan(&b.fp, &hash, &toks, &b.n); err != nil {
			t.Fatal(err)
		}
		b.hash = [32]byte(hash)
		for i := 0; i+4 <= len(toks); i += 4 {
			b.tokens = append(b.tokens, int32(binary.LittleEndian.Uint32(toks[i:])))
		}
		all = append(all, b)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	for _, b := range all {
		if err := s.LoadBlock(b.fp, b.hash, b.tokens, make([]byte, b.n)); err != nil {
			t.Errorf("stored block %x: %v", b.hash[:6], err)
		}
	}
	return len(all)
}
