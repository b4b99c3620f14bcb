package place

import (
	"fmt"
	"strconv"
	"strings"

	"folio/gpu"
	"folio/models/gguf"
)

// Split is gpu.Backend over two backends for a model too large for the
// GPU: layers 0 … onDev−1 and every weight outside the layers (embeddings,
// final norm, output) on dev, the other layers on host. Activations have a
// copy on each side and move only when an op runs on the side that lacks
// their latest values: in a forward pass, once into the host's layers and
// once out of them. Each op runs where its weight (or its layer's K/V)
// lives; ops without either run where the last such op ran.
type Split struct {
	dev, host gpu.Backend
	onDev     int         // layers on dev
	cur       gpu.Backend // where the last op with a weight or K/V ran
	stage     []float32   // host staging for copies between the sides
}

var (
	_ gpu.Backend       = (*Split)(nil)
	_ gpu.BlockIO       = (*Split)(nil)
	_ gpu.LayerKVCacher = (*Split)(nil)
)

// NewSplit puts layers 0 … onDev−1 on dev and the rest on host. Both must
// implement gpu.BlockIO for the split to persist blocks.
func NewSplit(dev, host gpu.Backend, onDev int) *Split {
	return &Split{dev: dev, host: host, onDev: onDev, cur: dev}
}

// OnDevice is the number of layers on the device.
func (s *Split) OnDevice() int { return s.onDev }

// Device is the backend of the first layers.
func (s *Split) Device() gpu.Backend { return s.dev }

func (s *Split) Name() string { return s.dev.Name() + "+" + s.host.Name() }

func (s *Split) Close() error {
	err := s.dev.Close()
	if err2 := s.host.Close(); err == nil {
		err = err2
	}
	return err
}

const (
	onDevBit  = 1
	onHostBit = 2
)

// splitTensor is a weight on one side, or an activation with a copy on
// each. Views (Slice) share their root's record of which copies are
// current: a pass writes its scratch before it reads it, so the rows past
// a view never carry values that matter.
type splitTensor struct {
	w     gpu.Tensor  // a weight
	side  gpu.Backend // the weight's backend
	d, h  gpu.Tensor  // an activation's copies
	root  *splitTensor
	fresh int // root only: onDevBit | onHostBit for the copies holding the latest values
	views []*splitTensor
}

func (t *splitTensor) any() gpu.Tensor {
	if t.w != nil {
		return t.w
	}
	return t.d
}
func (t *splitTensor) Type() gguf.TensorType { return t.any().Type() }
func (t *splitTensor) Rows() int             { return t.any().Rows() }
func (t *splitTensor) Cols() int             { return t.any().Cols() }

// layerOf is the layer of a weight named blk.N.…, ok false for others.
func layerOf(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "blk.")
	if !ok {
		return 0, false
	}
	n, _, ok := strings.Cut(rest, ".")
	if !ok {
		return 0, false
	}
	l, err := strconv.Atoi(n)
	return l, err == nil
}

func (s *Split) Weight(name string, typ gguf.TensorType, rows, cols int, data []byte) (gpu.Tensor, error) {
	side := s.dev
	if l, ok := layerOf(name); ok && l >= s.onDev {
		side = s.host
	}
	w, err := side.Weight(name, typ, rows, cols, data)
	if err != nil {
		return nil, err
	}
	return &splitTensor{w: w, side: side}, nil
}

func (s *Split) NewTensor(rows, cols int) (gpu.Tensor, error) {
	d, err := s.dev.NewTensor(rows, cols)
	if err != nil {
		return nil, err
	}
	h, err := s.host.NewTensor(rows, cols)
	if err != nil {
		return nil, err
	}
	t := &splitTensor{d: d, h: h, fresh: onDevBit | onHostBit}
	t.root = t
	return t, nil
}

func (s *Split) Slice(t gpu.Tensor, rows int) gpu.Tensor {
	st := s.tensor(t)
	if st.w != nil {
		return &splitTensor{w: st.side.Slice(st.w, rows), side: st.side}
	}
	if rows == st.Rows() {
		return st
	}
	for _, v := range st.views {
		if v.Rows() == rows {
			return v
		}
	}
	v := &splitTensor{d: s.dev.Slice(st.d, rows), h: s.host.Slice(st.h, rows), root: st.root}
	st.views = append(st.views, v)
	return v
}

func (s *Split) tensor(t gpu.Tensor) *splitTensor {
	st, ok := t.(*splitTensor)
	if !ok {
		panic(fmt.Sprintf("place: split: tensor %T is not a split tensor", t))
	}
	return st
}

// in is t's copy on side be, brought up to date first.
func (s *Split) in(be gpu.Backend, t gpu.Tensor) gpu.Tensor {
	st := s.tensor(t)
	if st.w != nil {
		if st.side != be {
			panic(fmt.Sprintf("place: split: a weight on %s used on %s", st.side.Name(), be.Name()))
		}
		return st.w
	}
	bit, from, to, src, dst := onDevBit, s.host, s.dev, st.h, st.d
	if be == s.host {
		bit, from, to, src, dst = onHostBit, s.dev, s.host, st.d, st.h
	}
	if st.root.fresh&bit == 0 {
		n := st.Rows() * st.Cols()
		if cap(s.stage) < n {
			s.stage = make([]float32, n)
		}
		from.Download(s.stage[:n], src)
		to.Upload(dst, s.stage[:n])
		st.root.fresh |= bit
	}
	return dst
}

// out is t's copy on side be, which the op about to run makes the only
// current one. An op reads its inputs (in) before naming its output, so
// an output that is also an input is brought up to date first.
func (s *Split) out(be gpu.Backend, t gpu.Tensor) gpu.Tensor {
	st := s.tensor(t)
	if st.w != nil {
		panic("place: split: an op writes a weight")
	}
	if be == s.dev {
		st.root.fresh = onDevBit
		return st.d
	}
	st.root.fresh = onHostBit
	return st.h
}

// sideOf is the backend of a weight; ok false for an activation.
func (s *Split) sideOf(t gpu.Tensor) (gpu.Backend, bool) {
	st := s.tensor(t)
	return st.side, st.w != nil
}

// at is the side of weight w, which becomes the current side.
func (s *Split) at(w gpu.Tensor) gpu.Backend {
	if be, ok := s.sideOf(w); ok {
		s.cur = be
	}
	return s.cur
}

func (s *Split) Upload(dst gpu.Tensor, src []float32) {
	s.host.Upload(s.out(s.host, dst), src)
}

func (s *Split) Download(dst []float32, src gpu.Tensor) {
	st := s.tensor(src)
	if st.w == nil && st.root.fresh&onHostBit != 0 {
		s.host.Download(dst, st.h)
		return
	}
	s.dev.Download(dst, s.in(s.dev, src))
}

func (s *Split) Embed(dst, table gpu.Tensor, ids []int32) {
	be := s.at(table)
	be.Embed(s.out(be, dst), s.in(be, table), ids)
}

func (s *Split) MatMul(dst, x, w gpu.Tensor) {
	be := s.at(w)
	xi := s.in(be, x)
	be.MatMul(s.out(be, dst), xi, s.in(be, w))
}

func (s *Split) RMSNorm(dst, x, w gpu.Tensor, eps float32) {
	be := s.at(w)
	xi := s.in(be, x)
	be.RMSNorm(s.out(be, dst), xi, s.in(be, w), eps)
}

func (s *Split) Add(dst, a, b gpu.Tensor) {
	be := s.at(b)
	ai, bi := s.in(be, a), s.in(be, b)
	be.Add(s.out(be, dst), ai, bi)
}

func (s *Split) SiLUMul(dst, gate, up gpu.Tensor) {
	be := s.cur
	gi, ui := s.in(be, gate), s.in(be, up)
	be.SiLUMul(s.out(be, dst), gi, ui)
}

func (s *Split) Rope(x gpu.Tensor, pos []int32, r *gpu.Rope) {
	be := s.cur
	s.in(be, x)
	be.Rope(s.out(be, x), pos, r)
}

func (s *Split) Softmax(x gpu.Tensor) {
	be := s.cur
	s.in(be, x)
	be.Softmax(s.out(be, x))
}

func (s *Split) Gather(dst, x gpu.Tensor, rows []int32) {
	be := s.at(x)
	xi := s.in(be, x)
	be.Gather(s.out(be, dst), xi, rows)
}

func (s *Split) Scale(dst, x gpu.Tensor, v float32) {
	be := s.cur
	xi := s.in(be, x)
	be.Scale(s.out(be, dst), xi, v)
}

func (s *Split) GELUMul(dst, gate, up gpu.Tensor) {
	be := s.cur
	gi := s.in(be, gate)
	var ui gpu.Tensor
	if up != nil {
		ui = s.in(be, up)
	}
	be.GELUMul(s.out(be, dst), gi, ui)
}

func (s *Split) SwiGLUOAI(dst, gate, up gpu.Tensor, alpha, limit float32) {
	be := s.cur
	gi, ui := s.in(be, gate), s.in(be, up)
	be.SwiGLUOAI(s.out(be, dst), gi, ui, alpha, limit)
}

func (s *Split) Softcap(x gpu.Tensor, c float32) {
	be := s.cur
	s.in(be, x)
	be.Softcap(s.out(be, x), c)
}

// LayerNorm runs where its weight (else its bias, else the current
// layer) lives.
func (s *Split) LayerNorm(dst, x, w, b gpu.Tensor, eps float32) {
	be := s.cur
	switch {
	case w != nil:
		be = s.at(w)
	case b != nil:
		be = s.at(b)
	}
	xi := s.in(be, x)
	var wi, bi gpu.Tensor
	if w != nil {
		wi = s.in(be, w)
	}
	if b != nil {
		bi = s.in(be, b)
	}
	be.LayerNorm(s.out(be, dst), xi, wi, bi, eps)
}

var _ gpu.Experts = (*Split)(nil)

// ExpertMatMuls runs on the side of the experts' weights (a layer's, all
// on one side), whose backend must have gpu.Experts (the CPU and CUDA
// do).
func (s *Split) ExpertMatMuls(dsts []gpu.Tensor, x gpu.Tensor, rows []int32, ws [][]gpu.Tensor, spans []gpu.ExpertSpan) {
	if len(spans) == 0 || len(ws) == 0 {
		panic("place: split: ExpertMatMuls of no spans or no weights")
	}
	be := s.at(ws[0][spans[0].Expert])
	xi := s.in(be, x)
	in := make([][]gpu.Tensor, len(ws))
	for j, l := range ws {
		in[j] = make([]gpu.Tensor, len(l))
		for e, w := range l {
			in[j][e] = s.in(be, w)
		}
	}
	out := make([]gpu.Tensor, len(dsts))
	for j, d := range dsts {
		out[j] = s.out(be, d)
	}
	experts(be).ExpertMatMuls(out, xi, rows, in, spans)
}

// ExpertSum runs where the last weight op ran.
func (s *Split) ExpertSum(dst, y gpu.Tensor, at []int32, weights []float32) {
	be := s.cur
	yi := s.in(be, y)
	experts(be).ExpertSum(s.out(be, dst), yi, at, weights)
}

func experts(be gpu.Backend) gpu.Experts {
	ex, ok := be.(gpu.Experts)
	if !ok {
		panic(fmt.Sprintf("place: split: %s has no Experts ops", be.Name()))
	}
	return ex
}
