package arch_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"folio/gpu/cpu"
	"folio/models/arch"
	"folio/models/gguf"
	"folio/models/synth"
)

// Command R+'s per-head Q and K norms are refused, saying so, not run
// without them; a cohere2 file without its window or logit scale is
// refused naming the key.
func TestCommandRRefuses(t *testing.T) {
	for _, c := range []struct {
		name, arch string
		edit       func(w *gguf.Writer)
		want       string
	}{
		{"Command R+", "command-r", func(w *gguf.Writer) {
			w.AddTensor("blk.0.attn_q_norm.weight", gguf.TypeF32, []uint64{32, 2}, make([]byte, 256))
		}, "per-head Q and K norms (Command R+) are not supported"},
		{"no window", "cohere2", func(w *gguf.Writer) { w.Delete("cohere2.attention.sliding_window") },
			"cohere2.attention.sliding_window is 0 (present: false); a cohere2 file needs a positive one"},
		{"no logit scale", "cohere2", func(w *gguf.Writer) { w.Delete("cohere2.logit_scale") }, "no cohere2.logit_scale"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := synth.Config{Arch: c.arch, Embd: 64, Layers: 4, Heads: 2, HeadsKV: 1, FFN: 128, Ctx: 256,
				Tied: true, LogitScale: 0.5, Window: 16 * map[string]int{"cohere2": 1}[c.arch]}
			refused(t, cfg, c.edit, c.want)
		})
	}
}

// refused writes the synthetic model of cfg with edit's changes and fails
// t unless arch.Load refuses it with an arch.ErrModel containing want.
func refused(t *testing.T, cfg synth.Config, edit func(w *gguf.Writer), want string) {
	t.Helper()
	sm, err := synth.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w := sm.Writer()
	edit(w)
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse("m.gguf", buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	be := cpu.New(1)
	defer be.Close()
	_, err = arch.Load(f, be, arch.Options{MaxRows: 8})
	if !errors.Is(err, arch.ErrModel) || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v; want arch.ErrModel containing %q", err, want)
	}
}
