package arch

import (
	"fmt"
	"slices"

	"folio/gpu"
)

// Groups maps a model's layers onto K/V caches, one per layer group: the
// layers that attend alike (full attention, or one sliding window) share
// a cache, a block table per sequence and a pool (paged.Group), so that a
// sliding group's pool holds windows, not contexts.
type Groups struct {
	Windows []int // Windows[g]: group g's sliding window in tokens, 0 for full attention
	Layers  []int // Layers[g]: how many layers group g has (its cache's KVSpec.Layers)
	Of      []int // Of[l]: layer l's group
	Index   []int // Index[l]: layer l's index in its group's cache
	// KVHeads[g] and HeadDims[g]: the shape of group g's K/V, where the
	// model's layers have more than one (Config.LayerGroups); nil: every
	// group has the model's.
	KVHeads, HeadDims []int
	// Shares[l] >= 0: layer l has no K/V of its own and reads layer
	// Shares[l]'s, at its group and index (Config.KVFrom); nil: none.
	Shares []int
}

// LayerGroups is c's layers grouped by their windows (LayerGroups), with
// each group's K/V shape where the windowed layers have their own.
func (c *Config) LayerGroups() *Groups {
	g := LayerGroups(c.Windows, c.Layers)
	if c.KVFrom != nil { // the sharing layers come last in their groups
		g.Shares = c.KVFrom
		for l, src := range c.KVFrom {
			if src >= 0 {
				g.Layers[g.Of[l]]--
				g.Of[l], g.Index[l] = g.Of[src], g.Index[src]
			}
		}
	}
	if c.SWAHeadDim > 0 {
		for i := range g.Layers {
			h, d := c.LayerKV(g.LayersOf(i)[0])
			g.KVHeads, g.HeadDims = append(g.KVHeads, h), append(g.HeadDims, d)
		}
	}
	return g
}

// NeedsGroups reports whether the model's K/V cannot live in one cache of
// every layer: the windowed layers' of another shape, or layers sharing
// others' K/V.
func (c *Config) NeedsGroups() bool {
	return c.SWAHeadDim > 0 && c.Windows != nil || c.KVFrom != nil
}

// Spec is base as group i's cache: its layers, and its K/V shape where
// the groups have their own.
func (g *Groups) Spec(i int, base gpu.KVSpec) gpu.KVSpec {
	base.Layers = g.Layers[i]
	if g.KVHeads != nil {
		base.KVHeads, base.HeadDim = g.KVHeads[i], g.HeadDims[i]
	}
	return base
}

// LayerGroups groups layers by their windows (windows[l], 0 = full
// attention; nil: every layer full): the full-attention layers first,
// then each window in order of its first layer. A model of one kind of
// attention has one group, whose cache holds every layer in order.
func LayerGroups(windows []int, layers int) *Groups {
	g := &Groups{Of: make([]int, layers), Index: make([]int, layers)}
	order := []int{0}
	for _, w := range windows {
		if !slices.Contains(order, w) {
			order = append(order, w)
		}
	}
	for _, w := range order {
		n := 0
		for l := range layers {
			if window(windows, l) == w {
				g.Of[l], g.Index[l] = len(g.Windows), n
				n++
			}
		}
		if n > 0 {
			g.Windows = append(g.Windows, w)
			g.Layers = append(g.Layers, n)
		}
	}
	return g
}

// LayersOf is the model layers of group g, ascending: layer i of its
// cache is model layer LayersOf(g)[i].
func (g *Groups) LayersOf(group int) []int {
	var ls []int
	for l, gi := range g.Of {
		if gi == group && (g.Shares == nil || g.Shares[l] < 0) {
			ls = append(ls, l)
		}
	}
	return ls
}

func window(windows []int, l int) int {
	if l < len(windows) {
		return windows[l]
	}
	return 0
}

// checkGroups reports a pass whose caches or batches do not fit the model
// and the groups (nil: one group of every layer).
func (m *Model) checkGroups(g *Groups, kvs []gpu.KVCache, bs []*gpu.Batch, n int) error {
	groups, layers := 1, []int{m.Layers}
	if g == nil && m.NeedsGroups() {
		return fmt.Errorf("arch: %s's layers do not each keep K/V of one shape: run it with its layer groups (Config.LayerGroups)", m.Arch)
	}
	if g != nil {
		groups, layers = len(g.Layers), g.Layers
		if len(g.Of) != m.Layers || len(g.Index) != m.Layers {
			return fmt.Errorf("arch: layer groups for %d layers, the model has %d", len(g.Of), m.Layers)
		}
	}
	if len(kvs) != groups || len(bs) != groups {
		return fmt.Errorf("arch: %d caches and %d batches for %d layer groups", len(kvs), len(bs), groups)
	}
	b0 := bs[0]
	for i, b := range bs {
		if b.Rows() != n {
			return fmt.Errorf("arch: batch covers %d rows for %d tokens", b.Rows(), n)
		}
		if err := b.Check(); err != nil {
			return err
		}
		if len(b.Seqs) != len(b0.Seqs) {
			return fmt.Errorf("arch: group %d's batch has %d sequences, group 0's %d", i, len(b.Seqs), len(b0.Seqs))
		}
		for j, q := range b.Seqs {
			if p := b0.Seqs[j]; q.Start != p.Start || q.Len != p.Len || q.Pos != p.Pos {
				return fmt.Errorf("arch: group %d's batch places sequence %d elsewhere than group 0's", i, j)
			}
		}
		sp, heads, dim := kvs[i].Spec(), m.KVHeads, m.HeadDim
		if g != nil && g.KVHeads != nil {
			heads, dim = g.KVHeads[i], g.HeadDims[i]
		}
		if sp.Layers != layers[i] || sp.KVHeads != heads || sp.HeadDim != dim || sp.BlockSize != b.BlockSize {
			return fmt.Errorf("arch: KV cache %+v does not fit layer group %d (%d layers) of this model or its batch", sp, i, layers[i])
		}
	}
	return nil
}
