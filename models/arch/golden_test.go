package arch_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"folio/gpu"
	"folio/gpu/cpu"
	"folio/internal/fixtures"
	"folio/models/arch"
	"folio/models/gguf"
	"folio/models/synth"
)

// golden is one reference case written by testdata/golden/gen.sh: llama.cpp's
// last-position logits after a 64-token prompt (F32 KV cache, flash
// attention off) and its 32 greedy tokens after that prompt.
type golden struct {
	Case        string         `json:"case"`
	Synth       map[string]any `json:"synth"` // dev synth flags; nil for a shared model
	Model       string         `json:"model"` // file in ../shared/models when Synth is nil
	ModelSHA256 string         `json:"model_sha256"`
	Tokens      []int32        `json:"tokens"`
	VocabSize   int            `json:"vocab_size"`
	Logits      []float32      `json:"logits"`
	Greedy      []int32        `json:"greedy"`
	Llamaref    struct {
		Context struct {
			Size int `json:"context_size"` // llama.cpp's n_ctx: picks longrope's factors
		} `json:"context"`
	} `json:"llamaref"`
}

func loadGoldens(t *testing.T) []golden {
	t.Helper()
	paths, err := filepath.Glob("testdata/golden/*.json")
	if err != nil {
		t.Fatal(err)
	}
	var out []golden
	for _, p := range paths {
		if filepath.Base(p) == "MANIFEST.json" {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var g golden
		if err := json.Unmarshal(data, &g); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out = append(out, g)
	}
	if len(out) == 0 {
		t.Fatal("no golden files in testdata/golden")
	}
	return out
}

// goldenModel writes (or finds) the case's model file and checks it is the
// one the reference ran.
func goldenModel(t *testing.T, g golden) string {
	t.Helper()
	var path string
	if g.Synth == nil {
		path = fixtures.Model(t, g.Model)
	} else {
		cfg, err := synthConfig(g.Synth)
		if err != nil {
			t.Fatalf("%s: %v", g.Case, err)
		}
		m, err := synth.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		path = filepath.Join(t.TempDir(), g.Case+".gguf")
		if err := m.WriteFile(path); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != g.ModelSHA256 {
		t.Fatalf("%s: model sha256 %x differs from the reference's %s: regenerate the goldens (testdata/golden/gen.sh)", g.Case, sum, g.ModelSHA256)
	}
	return path
}

// synthConfig turns `folio dev synth` flags into a synth.Config.
func synthConfig(flags map[string]any) (synth.Config, error) {
	preset, _ := flags["preset"].(string)
	arch, _ := flags["arch"].(string)
	cfg, err := synth.ArchPreset(arch, preset) // the family's tiny preset, as dev synth takes it
	if err != nil {
		return cfg, err
	}
	num := func(k string) (float64, bool) { v, ok := flags[k].(float64); return v, ok }
	for k, v := range flags {
		switch k {
		case "preset", "arch":
		case "type":
			if cfg.Type, err = gguf.ParseTensorType(v.(string)); err != nil {
				return cfg, err
			}
		case "tie-embeddings":
			cfg.Tied = v.(bool)
		case "biases":
			cfg.Biases = v.(bool)
		case "qk-norm":
			cfg.QKNorm = v.(bool)
		case "double-wide":
			cfg.DoubleWide = v.(bool)
		case "rope-base":
			f, _ := num(k)
			cfg.RopeBase = float32(f)
		case "rope-scaling":
			cfg.Rope.Type = v.(string)
		case "gating":
			cfg.Gating = v.(string)
		case "rope-factor", "rope-attn-factor", "yarn-beta-fast", "yarn-beta-slow", "yarn-log-mul", "attn-temp-scale":
			f, _ := num(k)
			*map[string]*float32{"rope-factor": &cfg.Rope.Factor, "rope-attn-factor": &cfg.Rope.AttnFactor,
				"yarn-beta-fast": &cfg.Rope.BetaFast, "yarn-beta-slow": &cfg.Rope.BetaSlow, "yarn-log-mul": &cfg.Rope.LogMul,
				"attn-temp-scale": &cfg.AttnTemp}[k] = float32(f)
		default:
			dst := map[string]*int{"n-embd": &cfg.Embd, "n-layer": &cfg.Layers, "n-head": &cfg.Heads,
				"n-head-kv": &cfg.HeadsKV, "head-dim": &cfg.HeadDim, "n-ff": &cfg.FFN, "vocab-size": &cfg.VocabSize,
				"ctx": &cfg.Ctx, "rope-orig-ctx": &cfg.Rope.OrigCtx, "window": &cfg.Window,
				"n-expert": &cfg.Experts, "n-expert-used": &cfg.ExpertsUsed, "n-ff-exp": &cfg.ExpertFFN, "n-ff-shexp": &cfg.SharedFFN, "n-nextn": &cfg.NextN,
				"n-lora-q": &cfg.QLora, "attn-temp-len": &cfg.AttnTempLen, "n-expert-groups": &cfg.ExpertGroups, "n-group-used": &cfg.GroupsUsed,
				"n-embd-per-layer": &cfg.PLEDim, "n-kv-shared": &cfg.SharedKV}[k]
			f, ok := num(k)
			switch {
			case k == "seed" && ok:
				cfg.Seed = uint64(f)
			case dst != nil && ok:
				*dst = int(f)
			default:
				return cfg, fmt.Errorf("synth flag %q=%v is not known to this test", k, v)
			}
		}
	}
	return cfg, nil
}

// tolerance bounds max|ours − llama.cpp's| relative to
// max|logit|: llama.cpp rounds activations to F16 for F16 weights and to 8
// bits for quantized ones.
func tolerance(t gguf.TensorType) float64 {
	switch t {
	case gguf.TypeF32:
		return 1e-4
	case gguf.TypeF16:
		return 1e-2
	}
	return 2e-2
}

// weightType is the type of the model's experts, or without experts of
// its attn_output weights (every architecture has them; some fuse attn_q
// into attn_qkv): gpt-oss's MXFP4 files have their other matrices in BF16.
func weightType(f *gguf.File) gguf.TensorType {
	if ti, ok := f.Tensor("blk.0.ffn_up_exps.weight"); ok {
		return ti.Type
	}
	ti, _ := f.Tensor("blk.0.attn_output.weight")
	return ti.Type
}

func TestGoldenLogits(t *testing.T) {
	for _, g := range loadGoldens(t) {
		t.Run(g.Case, func(t *testing.T) {
			t.Parallel()
			r := openRigCtx(t, goldenModel(t, g), 16, gguf.TypeF32, g.Llamaref.Context.Size)
			logits := r.prompt(t, g.Tokens)
			if len(logits) != len(g.Logits) {
				t.Fatalf("%d logits, reference has %d", len(logits), len(g.Logits))
			}
			typ := weightType(r.f)
			diff, scale := maxDiff(logits, g.Logits)
			t.Logf("%v weights: max|diff| %.3g = %.3g × max|logit| %.3g", typ, diff, diff/scale, scale)
			if diff > tolerance(typ)*scale {
				t.Errorf("max|diff| %.4g exceeds %.0e × max|logit| %.4g", diff, tolerance(typ), scale)
			}
			if typ != gguf.TypeF32 && typ != gguf.TypeF16 {
				return
			}
			got := r.greedy(t, g.Tokens, len(g.Greedy))
			if !slices.Equal(got, g.Greedy) {
				t.Errorf("greedy tokens differ from llama.cpp's:\n ours  %v\n llama %v", got, g.Greedy)
			}
		})
	}
}

func maxDiff(a, b []float32) (diff, scale float64) {
	for i := range a {
		diff = max(diff, math.Abs(float64(a[i])-float64(b[i])))
		scale = max(scale, math.Abs(float64(b[i])))
	}
	return diff, scale
}

// rig is a model on the CPU backend with a K/V pool, or a pool per layer
// group where its layers' K/V have two shapes (g, kvs).
type rig struct {
	f   *gguf.File
	m   *arch.Model
	kv  gpu.KVCache
	bs  int
	g   *arch.Groups
	kvs []gpu.KVCache
}

func openRig(t testing.TB, path string, blockSize int, kvType gguf.TensorType) *rig {
	t.Helper()
	return openRigCtx(t, path, blockSize, kvType, 0)
}

// openRigCtx is openRig for sequences of up to ctx tokens (arch.Options.Context).
func openRigCtx(t testing.TB, path string, blockSize int, kvType gguf.TensorType, ctx int) *rig {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	be := cpu.New(2)
	t.Cleanup(func() { be.Close(); f.Close() })
	m, err := arch.Load(f, be, arch.Options{MaxRows: 128, MaxOut: 8, Context: ctx})
	if err != nil {
		t.Fatal(err)
	}
	// four sequences' tables (table) of 1024 positions, or of ctx's
	return newRig(t, f, m, m.KVSpec(4*max(1024, ctx+blockSize)/blockSize, blockSize, kvType))
}

// newRig is m with a pool of spec, and a pool of spec's blocks per layer
// group where the model's K/V have two shapes (each group's table that
// of the one pool).
func newRig(t testing.TB, f *gguf.File, m *arch.Model, spec gpu.KVSpec) *rig {
	t.Helper()
	be := m.Backend()
	kv, err := be.NewKVCache(spec)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{f: f, m: m, kv: kv, bs: spec.BlockSize}
	if m.NeedsGroups() {
		r.g = m.LayerGroups()
		for i := range r.g.Layers {
			c, err := be.NewKVCache(r.g.Spec(i, spec))
			if err != nil {
				t.Fatal(err)
			}
			r.kvs = append(r.kvs, c)
		}
	}
	return r
}

// table is the block table of one sequence: blocks taken from the pool in
// a scrambled order, so that no test passes by contiguous luck.
func (r *rig) table(seq int) []int32 {
	n := r.kv.Spec().Blocks
	per := n / 4
	out := make([]int32, per)
	for i := range out {
		out[i] = int32((seq*per + (i*7+3)%per) % n)
	}
	return out
}

// prompt runs ids as sequence 0 and returns the last logits: in one pass,
// or a longer prompt in passes of promptPiece rows.
func (r *rig) prompt(t testing.TB, ids []int32) []float32 {
	t.Helper()
	table, n := r.table(0), 0
	for ; len(ids)-n > promptPiece; n += promptPiece {
		r.run(t, []seqRun{{ids: ids[n : n+promptPiece], pos: n, table: table}})
	}
	return r.run(t, []seqRun{{ids: ids[n:], pos: n, table: table}})[0]
}

// promptPiece is the rows of a pass over a prompt longer than one: a
// number that divides no power of 2, so that passes cross the boundaries
// of Llama 4's attention chunks.
const promptPiece = 120

// greedy continues ids for n tokens, one decode step each.
func (r *rig) greedy(t testing.TB, ids []int32, n int) []int32 {
	t.Helper()
	table := r.table(0)
	logits := r.prompt(t, ids)
	var out []int32
	for len(out) < n {
		next := int32(0)
		for i, l := range logits {
			if l > logits[next] {
				next = int32(i)
			}
		}
		out = append(out, next)
		logits = r.run(t, []seqRun{{ids: []int32{next}, pos: len(ids) + len(out) - 1, table: table}})[0]
	}
	return out
}

// seqRun is one sequence's part of a batch: ids at positions pos….
type seqRun struct {
	ids   []int32
	pos   int
	table []int32
}

// run does one forward pass over the sequences and returns each one's
// last-row logits.
func (r *rig) run(t testing.TB, seqs []seqRun) [][]float32 {
	t.Helper()
	b := &gpu.Batch{BlockSize: r.bs}
	var tokens, out []int32
	for _, s := range seqs {
		b.Seqs = append(b.Seqs, gpu.Seq{Start: len(tokens), Len: len(s.ids), Pos: s.pos, Blocks: s.table})
		tokens = append(tokens, s.ids...)
		out = append(out, int32(len(tokens)-1))
	}
	var lt gpu.Tensor
	var err error
	if r.g != nil {
		bs := make([]*gpu.Batch, len(r.kvs))
		for i := range bs {
			bs[i] = b
		}
		lt, err = r.m.ForwardGroups(r.g, r.kvs, bs, tokens, out)
	} else {
		lt, err = r.m.Forward(r.kv, b, tokens, out)
	}
	if err != nil {
		t.Fatal(err)
	}
	all := make([]float32, lt.Rows()*lt.Cols())
	r.m.Backend().Download(all, lt)
	res := make([][]float32, len(seqs))
	for i := range res {
		res[i] = all[i*lt.Cols() : (i+1)*lt.Cols()]
	}
	return res
}
