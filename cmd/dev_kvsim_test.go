package cmd

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// smallTrace is five requests: arrival seconds, prompt and answer tokens.
const smallTrace = `# arrival prompt_len output_len
arrival,prompt_len,output_len
0,100,20
0,30,10
0.01,200,50
0.02,64,5
0.5,1000,24
`

func TestKVSimJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "small.csv")
	if err := os.WriteFile(path, []byte(smallTrace), 0o644); err != nil {
		t.Fatal(err)
	}
	// 256 MiB of 128 KiB tokens: 2,048 tokens; the context is 1,024.
	out, err := execute(t, "dev", "kvsim", "--trace", path, "--budget", "256MiB", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var fields []map[string]any
	if err := json.Unmarshal([]byte(out), &fields); err != nil {
		t.Fatalf("--json printed invalid JSON: %v\n%.300s", err, out)
	}
	want := []string{"block_size", "blocks_unshared", "blocks_used", "max_concurrent", "parallel_n", "policy", "trace", "waste_pct"}
	for _, f := range fields {
		var keys []string
		for k := range f {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, want) {
			t.Fatalf("row fields %v, want %v", keys, want)
		}
	}
	golden(t, "kvsim-small.json", strings.ReplaceAll(out, path, "<trace>"))

	var rows []struct {
		Policy         string
		BlockSize      int   `json:"block_size"`
		N              int   `json:"parallel_n"`
		MaxConcurrent  int   `json:"max_concurrent"`
		BlocksUsed     int64 `json:"blocks_used"`
		BlocksUnshared int64 `json:"blocks_unshared"`
	}
	json.Unmarshal([]byte(out), &rows)
	if len(rows) != 4*5 {
		t.Fatalf("%d rows, want 4 widths × 5 policies", len(rows))
	}
	for _, r := range rows {
		switch {
		case r.Policy == "static" && r.N == 1 && r.MaxConcurrent != 2:
			t.Errorf("static n=1: %d resident, want 2 (2,048 tokens / 1,024)", r.MaxConcurrent)
		case r.Policy == "paged" && r.BlockSize == 16 && r.N == 4:
			// Each request: its prompt's full blocks once, then 4 × its own.
			var want int64
			for _, q := range [][2]int{{100, 20}, {30, 10}, {200, 50}, {64, 5}, {1000, 24}} {
				shared := q[0] / 16
				want += int64(shared + 4*((q[0]+q[1]+15)/16-shared))
			}
			if r.BlocksUsed != want || r.BlocksUnshared != 4*(8+3+16+5+64) {
				t.Errorf("paged B=16 n=4: %d blocks (want %d), %d unshared (want %d)", r.BlocksUsed, want, r.BlocksUnshared, 4*(8+3+16+5+64))
			}
		}
	}
}

func TestKVSimTableAndChart(t *testing.T) {
	dir := t.TempDir()
	path, png := filepath.Join(dir, "small.csv"), filepath.Join(dir, "kvsim.png")
	os.WriteFile(path, []byte(smallTrace), 0o644)
	out, err := execute(t, "dev", "kvsim", "--trace", path, "--budget", "256MiB", "--png", png)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "paged B=16 wastes") || !strings.Contains(out, "n=4 sampling with paged B=16 takes") {
		t.Errorf("table without its summary:\n%s", out)
	}
	data, err := os.ReadFile(png)
	if err != nil || !bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("--png wrote no PNG (%v)", err)
	}
}

func TestKVSimErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--trace", "nosuch"}, "neither chat, extraction nor a readable file"},
		{[]string{"--trace", "chat", "--budget", "lots"}, `budget "lots" is not a size`},
	} {
		if _, err := execute(t, append([]string{"dev", "kvsim"}, tc.args...)...); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("kvsim %v: error %v, want one containing %q", tc.args, err, tc.msg)
		}
	}
}
