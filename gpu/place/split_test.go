package place

import (
	"bytes"
	"path/filepath"
	"testing"

	"folio/gpu"
	"folio/gpu/conformance"
	"folio/gpu/cpu"
	"folio/models/gguf"
	"folio/models/synth"
)

func TestLayerOf(t *testing.T) {
	for name, want := range map[string]int{"blk.0.attn_q.weight": 0, "blk.31.ffn_down.weight": 31,
		"token_embd.weight": -1, "output_norm.weight": -1, "blk.x.attn_q.weight": -1, "blk.7": -1} {
		l, ok := layerOf(name)
		if !ok {
			l = -1
		}
		if l != want {
			t.Errorf("%s: layer %d, want %d", name, l, want)
		}
	}
}

// countingCPU counts the values uploaded into it: the copies a Split
// makes from the other side.
type countingCPU struct {
	*cpu.Backend
	uploads int
}

func (c *countingCPU) Upload(dst gpu.Tensor, src []float32) {
	c.uploads++
	c.Backend.Upload(dst, src)
}

// synthModel writes the tiny preset of arch with layers layers of typ.
func synthModel(t *testing.T, arch string, typ gguf.TensorType, layers int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), arch+".gguf")
	if err := synth.WriteTiny(path, arch, typ, 4, func(c *synth.Config) { c.Layers = layers }); err != nil {
		t.Fatal(err)
	}
	return path
}

// A split of the CPU with itself computes what the CPU does, bit for bit,
// at every split point, and moves activations across only where the
// layers change sides.
func TestSplitMatchesOneBackend(t *testing.T) {
	path := synthModel(t, "qwen2", gguf.TypeQ8_0, 3)
	ref := cpu.New(1)
	defer ref.Close()
	for onDev := 0; onDev <= 3; onDev++ {
		dev, host := &countingCPU{Backend: cpu.New(1)}, &countingCPU{Backend: cpu.New(1)}
		s := NewSplit(dev, host, onDev)
		g, err := conformance.CheckGeneration(path, ref, s, 4)
		if err != nil {
			t.Fatal(err)
		}
		if g.Worst != 0 || g.Differ != 0 {
			t.Errorf("%d layers on the device: %+v", onDev, g)
		}
		// 4 passes: into the host's layers and back for the output, when
		// the host has layers.
		want := 0
		if onDev < 3 {
			want = 2 * 4
		}
		if host.uploads+dev.uploads != want {
			t.Errorf("%d layers on the device: %d copies to the host, %d to the device, want %d in all",
				onDev, host.uploads, dev.uploads, want)
		}
		s.Close()
	}
}

func TestSplitBlockIO(t *testing.T) {
	s := NewSplit(cpu.New(1), cpu.New(1), 2)
	defer s.Close()
	one := cpu.New(1)
	defer one.Close()
	spec := gpu.KVSpec{Layers: 5, Blocks: 3, BlockSize: 4, KVHeads: 2, HeadDim: 8, Type: gguf.TypeF16}
	sc, err := s.NewKVCache(spec)
	if err != nil {
		t.Fatal(err)
	}
	oc, _ := one.NewKVCache(spec)
	// The same K/V written into every layer of both: the canonical bytes
	// of a block agree.
	k, v := make([]float32, 3*16), make([]float32, 3*16)
	for i := range k {
		k[i], v[i] = float32(i)/7, -float32(i)/3
	}
	for _, be := range []gpu.Backend{s, one} {
		c := map[gpu.Backend]gpu.KVCache{s: sc, one: oc}[be]
		kt, _ := be.NewTensor(3, 16)
		vt, _ := be.NewTensor(3, 16)
		be.Upload(kt, k)
		be.Upload(vt, v)
		for l := range spec.Layers {
			kk := kt
			if l%2 == 1 {
				kk = vt
			}
			be.WriteKV(c, l, kk, vt, []int32{4, 5, 11})
		}
	}
	got, want := make([]byte, spec.BlockBytes()), make([]byte, spec.BlockBytes())
	s.ReadBlock(sc, 1, got)
	one.ReadBlock(oc, 1, want)
	if !bytes.Equal(got, want) {
		t.Fatal("a split pool's block differs from one pool's")
	}
	s.CopyBlocks(sc, []gpu.BlockCopy{{Src: 1, Dst: 0}})
	s.WriteBlock(sc, 2, got)
	for _, b := range []int32{0, 2} {
		s.ReadBlock(sc, b, got)
		if !bytes.Equal(got, want) {
			t.Errorf("block %d after CopyBlocks / WriteBlock differs", b)
		}
	}
}
