// Command tokbench is folio's side of bench/tokenize.sh: it tokenizes the
// benchmark text (fixtures.MixedText) with a GGUF vocabulary and prints the
// median throughput as JSON, in the same shape as bench/llamacpp/tokbench.c (llama.cpp).
//
//	go run ./bench/tokbench -model VOCAB.gguf [-size 1048576] [-reps 7] [-write-text FILE]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"time"

	"folio/internal/fixtures"
	"folio/models/gguf"
	"folio/models/tokenizer"
)

func main() {
	model := flag.String("model", "", "GGUF file with a tokenizer")
	size := flag.Int("size", 1<<20, "bytes of benchmark text")
	reps := flag.Int("reps", 7, "repetitions (the median is reported)")
	special := flag.Bool("parse-special", false, "parse special-token text")
	writeText := flag.String("write-text", "", "write the benchmark text to this file and exit")
	flag.Parse()
	text := fixtures.MixedText(*size, 1)
	if *writeText != "" {
		if err := os.WriteFile(*writeText, []byte(text), 0o644); err != nil {
			fail(err)
		}
		return
	}
	f, err := gguf.Open(*model)
	if err != nil {
		fail(err)
	}
	tok, err := tokenizer.New(f)
	if err != nil {
		fail(err)
	}
	var ids []int32
	times := make([]float64, *reps)
	for i := range times {
		start := time.Now()
		ids = tok.Encode(text, tokenizer.EncodeOptions{ParseSpecial: *special})
		times[i] = time.Since(start).Seconds()
	}
	slices.Sort(times)
	med := times[len(times)/2]
	json.NewEncoder(os.Stdout).Encode(map[string]any{
		"impl": "folio", "bytes": len(text), "tokens": len(ids), "reps": *reps,
		"median_s": med, "mb_per_s": float64(len(text)) / med / 1e6,
	})
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "tokbench:", err)
	os.Exit(1)
}
