package grammar_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"testing"

	"folio/internal/fixtures"
	"folio/models/gguf"
	"folio/models/synth"
	"folio/runner"
	"folio/runner/grammar"
)

// loadTiny writes the tiny synthetic llama with vocab (nil: its byte
// vocabulary) and starts an engine on it.
func loadTiny(t *testing.T, vocab *synth.Vocab) *runner.Engine {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	err := synth.WriteTiny(path, "llama", gguf.TypeQ8_0, 9, func(c *synth.Config) {
		if vocab != nil {
			c.Vocab, c.VocabSize = vocab, 0 // the vocabulary's own size
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := runner.Load(path, runner.LoadOptions{NumCtx: 1024})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	e, err := runner.NewEngine(m, runner.EngineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// TestSchemaSetOnTinyModels generates under every schema of
// testdata/schemas with the tiny synthetic models (its byte vocabulary,
// and GPT-2's) at temperature 1, through the engine with num_predict 160:
// every output must be complete and valid, though a random model writes
// strings that would run on for ever (the limit makes them end).
func TestSchemaSetOnTinyModels(t *testing.T) {
	schemas := grammar.SchemaSet(t)
	names := make([]string, 0, len(schemas))
	for n := range schemas {
		names = append(names, n)
	}
	sort.Strings(names)
	gpt2, err := synth.LoadVocab(fixtures.Model(t, "ggml-vocab-gpt-2.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, vc := range []struct {
		name  string
		vocab *synth.Vocab
		n     int // samples per schema
	}{{"bytes", nil, 3}, {"gpt-2", gpt2, 1}} {
		t.Run(vc.name, func(t *testing.T) {
			if vc.vocab != nil && testing.Short() {
				t.Skip("-short: the byte vocabulary only (sampling from 50k tokens at temperature 1 sorts them all)")
			}
			e := loadTiny(t, vc.vocab)
			var wg sync.WaitGroup
			var mu sync.Mutex
			outputs, lengths := 0, map[string]int{}
			for i, name := range names {
				g, err := grammar.Format(context.Background(), schemas[name])
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				st, err := e.Submit(context.Background(), runner.Request{
					Prompt: []int32{1, int32(10 + i), int32(20 + i)}, Format: g, NumPredict: 160, N: vc.n,
					Sample: runner.SampleOptions{Temperature: 1, TopP: 1, TypicalP: 1, RepeatPenalty: 1, Seed: int64(i)},
				})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				wg.Go(func() {
					texts := make([]string, vc.n)
					var reasons []string
					for {
						ev, ok := st.Recv(context.Background())
						if !ok {
							break
						}
						texts[ev.Index] += ev.Text
						if ev.Done {
							if ev.Err != nil {
								t.Errorf("%s sample %d: %v after %q", name, ev.Index, ev.Err, texts[ev.Index])
							}
							reasons = append(reasons, ev.Reason)
						}
					}
					mu.Lock()
					defer mu.Unlock()
					for k, text := range texts {
						if err := grammar.Validate(schemas[name], []byte(text)); err != nil {
							t.Errorf("%s sample %d (%v): %v in %q", name, k, reasons, err, text)
						}
						outputs++
						lengths[fmt.Sprint(len(text)/40*40)]++
					}
				})
			}
			wg.Wait()
			t.Logf("%d outputs from %d schemas, all valid: bytes by 40s %v", outputs, len(names), lengths)
		})
	}
}
