package tokenizer

import (
	"path/filepath"
	"slices"
	"testing"

	"folio/internal/fixtures"
	"folio/models/gguf"
)

// TestFIMPrompt: deepseek-coder's vocabulary has no fim_* keys; its FIM
// tokens are found by their text, and the prompt is BOS FIM_PRE prefix
// FIM_SUF suffix FIM_MID with the pieces encoded as Hugging Face does
// (the ids of "Hello world" and " Hello World!" are those of the .out
// vectors).
func TestFIMPrompt(t *testing.T) {
	tok := openTokenizer(t, fixtures.Model(t, "ggml-vocab-deepseek-coder.gguf"))
	v := tok.Vocab()
	if !v.HasFIM() || v.FIMPre != 32016 || v.FIMSuf != 32015 || v.FIMMid != 32017 {
		t.Fatalf("FIM tokens %d %d %d, want 32016 32015 32017", v.FIMPre, v.FIMSuf, v.FIMMid)
	}
	plain := EncodeOptions{}
	got := v.FIMPrompt(tok.Encode("Hello world", plain), tok.Encode(" Hello World!", plain), true)
	want := []int32{32013, 32016, 17535, 1835, 32015, 414, 9489, 5414, 0, 32017}
	if !slices.Equal(got, want) {
		t.Errorf("FIM prompt %v, want %v", got, want)
	}
	if got := v.FIMPrompt(nil, nil, false); !slices.Equal(got, []int32{32016, 32015, 32017}) {
		t.Errorf("FIM prompt without BOS %v", got)
	}
	// a control token now: user text spelling it stays text
	if ids := tok.Encode("<｜fim▁begin｜>", plain); slices.Contains(ids, 32016) {
		t.Errorf("user text became the FIM token: %v", ids)
	}
	if gpt2 := openTokenizer(t, fixtures.Model(t, "ggml-vocab-gpt-2.gguf")).Vocab(); gpt2.HasFIM() {
		t.Errorf("gpt-2 has FIM tokens %d %d %d", gpt2.FIMPre, gpt2.FIMSuf, gpt2.FIMMid)
	}
}

// TestFIMKeys: the fim_*_token_id keys win over the text, the older
// prefix/suffix/middle names are read, and an id outside the vocabulary
// is an error.
func TestFIMKeys(t *testing.T) {
	src, err := gguf.Open(fixtures.Model(t, "ggml-vocab-deepseek-coder.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	load := func(set map[string]uint32) (*Vocab, error) {
		w := gguf.NewWriter()
		for _, kv := range src.KV {
			w.Set(kv.Key, kv.Value)
		}
		for k, id := range set {
			w.Set("tokenizer.ggml."+k+"_token_id", id)
		}
		path := filepath.Join(t.TempDir(), "v.gguf")
		if err := w.WriteFile(path); err != nil {
			t.Fatal(err)
		}
		f, err := gguf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		return LoadVocab(f)
	}
	v, err := load(map[string]uint32{"fim_pre": 10, "suffix": 11, "fim_mid": 12, "middle": 13})
	if err != nil {
		t.Fatal(err)
	}
	if v.FIMPre != 10 || v.FIMSuf != 11 || v.FIMMid != 12 {
		t.Errorf("FIM tokens %d %d %d, want 10 11 12", v.FIMPre, v.FIMSuf, v.FIMMid)
	}
	if _, err := load(map[string]uint32{"fim_pre": 99999}); err == nil {
		t.Error("fim_pre_token_id 99999 accepted")
	}
}
