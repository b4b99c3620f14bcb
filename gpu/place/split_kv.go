package place

import (
	"fmt"

	"folio/gpu"
)

// splitKV is the K/V pool of a Split: the device's layers in one pool, the
// host's in another, under the same block IDs.
type splitKV struct {
	spec  gpu.KVSpec
	d, h  gpu.KVCache // nil when a side has no layers
	onDev int
}

func (c *splitKV) Spec() gpu.KVSpec { return c.spec }

func (s *Split) NewKVCache(spec gpu.KVSpec) (gpu.KVCache, error) {
	return s.newKV(spec, min(s.onDev, spec.Layers))
}

// NewLayerKVCache is the pool of the model's layers (a layer group's):
// those below the split point, its first ones, on the device with their
// weights, the rest on the host (gpu.LayerKVCacher).
func (s *Split) NewLayerKVCache(spec gpu.KVSpec, layers []int) (gpu.KVCache, error) {
	if len(layers) != spec.Layers {
		return nil, fmt.Errorf("place: split: a K/V pool of %d layers for %d model layers", spec.Layers, len(layers))
	}
	onDev := 0
	for i, l := range layers {
		if i > 0 && l <= layers[i-1] {
			return nil, fmt.Errorf("place: split: the model layers of a K/V pool must ascend (%v)", layers)
		}
		if l < s.onDev {
			onDev++
		}
	}
	return s.newKV(spec, onDev)
}

// newKV is a pool whose first onDev layers are on the device.
func (s *Split) newKV(spec gpu.KVSpec, onDev int) (gpu.KVCache, error) {
	if err := spec.Check(); err != nil {
		return nil, err
	}
	c := &splitKV{spec: spec, onDev: onDev}
	var err error
	if c.onDev > 0 {
		ds := spec
		ds.Layers = c.onDev
		if c.d, err = s.dev.NewKVCache(ds); err != nil {
			return nil, err
		}
	}
	if spec.Layers > c.onDev {
		hs := spec
		hs.Layers = spec.Layers - c.onDev
		if c.h, err = s.host.NewKVCache(hs); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (s *Split) kv(c gpu.KVCache) *splitKV {
	sc, ok := c.(*splitKV)
	if !ok {
		panic(fmt.Sprintf("place: split: K/V cache %T is not a split cache", c))
	}
	return sc
}

// layer is the side, pool and index there of layer, which becomes the
// current side.
func (s *Split) layer(c gpu.KVCache, layer int) (gpu.Backend, gpu.KVCache, int) {
	sc := s.kv(c)
	if layer < sc.onDev {
		s.cur = s.dev
		return s.dev, sc.d, layer
	}
	s.cur = s.host
	return s.host, sc.h, layer - sc.onDev
}

func (s *Split) WriteKV(c gpu.KVCache, layer int, k, v gpu.Tensor, slots []int32) {
	be, kv, l := s.layer(c, layer)
	be.WriteKV(kv, l, s.in(be, k), s.in(be, v), slots)
}

func (s *Split) Attention(dst, q gpu.Tensor, c gpu.KVCache, layer int, b *gpu.Batch, o gpu.AttnOpts) {
	be, kv, l := s.layer(c, layer)
	qi := s.in(be, q)
	if o.Sinks != nil {
		o.Sinks = s.in(be, o.Sinks) // a weight of the layer, on its side
	}
	be.Attention(s.out(be, dst), qi, kv, l, b, o)
}

func (s *Split) CopyBlocks(c gpu.KVCache, copies []gpu.BlockCopy) {
	sc := s.kv(c)
	if sc.d != nil {
		s.dev.CopyBlocks(sc.d, copies)
	}
	if sc.h != nil {
		s.host.CopyBlocks(sc.h, copies)
	}
}

// ReadBlock fills dst in the canonical layout, which is layer-major: the
// device's layers' bytes, then the host's.
func (s *Split) ReadBlock(c gpu.KVCache, block int32, dst []byte) {
	s.blockIO(c, dst, func(be gpu.BlockIO, kv gpu.KVCache, part []byte) { be.ReadBlock(kv, block, part) })
}

// WriteBlock is ReadBlock's inverse.
func (s *Split) WriteBlock(c gpu.KVCache, block int32, src []byte) {
	s.blockIO(c, src, func(be gpu.BlockIO, kv gpu.KVCache, part []byte) { be.WriteBlock(kv, block, part) })
}

func (s *Split) blockIO(c gpu.KVCache, buf []byte, f func(gpu.BlockIO, gpu.KVCache, []byte)) {
	sc := s.kv(c)
	if want := sc.spec.BlockBytes(); int64(len(buf)) != want {
		panic(fmt.Sprintf("place: split: a buffer of %d bytes for a block of %d", len(buf), want))
	}
	cut := 0
	if sc.d != nil {
		cut = int(sc.d.Spec().BlockBytes())
		f(s.dev.(gpu.BlockIO), sc.d, buf[:cut])
	}
	if sc.h != nil {
		f(s.host.(gpu.BlockIO), sc.h, buf[cut:])
	}
}
