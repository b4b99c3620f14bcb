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
// without them.
func TestCommandRPlusRefused(t *testing.T) {
	sm, err := synth.New(synth.Config{Arch: "command-r", Embd: 64, Layers: 2, Heads: 2, HeadsKV: 1, FFN: 128, Ctx: 256, Tied: true})
	if err != nil {
		t.Fatal(err)
	}
	w := sm.Writer()
	w.AddTensor("blk.0.attn_q_norm.weight", gguf.TypeF32, []uint64{32, 2}, make([]byte, 256))
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse("cr.gguf", buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	be := cpu.New(1)
	defer be.Close()
	_, err = arch.Load(f, be, arch.Options{MaxRows: 8})
	if !errors.Is(err, arch.ErrModel) || !strings.Contains(err.Error(), "per-head Q and K norms (Command R+) are not supported") {
		t.Fatalf("error %v; want arch.ErrModel naming Command R+'s norms", err)
	}
}
