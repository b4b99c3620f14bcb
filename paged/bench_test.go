package paged

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// noInvariants skips a benchmark built with -tags invariants, where every
// operation checks the whole state.
func noInvariants(b *testing.B) {
	if invariants {
		b.Skip("built with -tags invariants: timings would be of the checker")
	}
}

func BenchmarkAllocFree(b *testing.B) {
	noInvariants(b)
	p, _ := NewBlockPool(1024, 16)
	for b.Loop() {
		id, _ := p.Alloc()
		p.Release(id)
	}
}

// BenchmarkAppend grows sequences one token at a time: a lone sequence
// (a plan of one), and a decode step of 256 sequences in one plan.
func BenchmarkAppend(b *testing.B) {
	noInvariants(b)
	b.Run("token", func(b *testing.B) {
		m, _ := New(Config{Blocks: 1024})
		s := m.NewSeq("")
		for b.Loop() {
			if m.Len(s) == 4096 {
				m.Free(s)
				s = m.NewSeq("")
			}
			if err := m.Append(s, 1); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("step256", func(b *testing.B) {
		m, _ := New(Config{Blocks: 256 * 64})
		seqs := make([]SeqID, 256)
		for i := range seqs {
			seqs[i] = m.NewSeq("")
		}
		var p Plan
		for b.Loop() {
			if m.Len(seqs[0]) == 1024 {
				for i, s := range seqs {
					m.Free(s)
					seqs[i] = m.NewSeq("")
				}
			}
			for _, s := range seqs {
				if err := m.Reserve(&p, s, 1); err != nil {
					b.Fatal(err)
				}
			}
			m.Commit(&p)
		}
	})
}

func BenchmarkFork4096(b *testing.B) {
	noInvariants(b)
	m, _ := New(Config{Blocks: 1024})
	s := m.NewSeq("")
	if err := m.Append(s, 4096); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		m.Free(m.Fork(s))
	}
}

// radixMillion builds a cache of 256 prompts of 4,096 tokens (1M tokens)
// that share a 512-token system prompt, and returns one more such prompt,
// not cached.
func radixMillion(b *testing.B) (m *Manager, prompts [][]int32, fresh []int32) {
	const n, length, system = 256, 4096, 512
	rng := rand.New(rand.NewPCG(1, 2))
	random := func(k int) []int32 {
		t := make([]int32, k)
		for i := range t {
			t[i] = rng.Int32N(128000)
		}
		return t
	}
	m, _ = New(Config{Blocks: (n+2)*length/16 + 64})
	sys := random(system)
	for range n + 1 {
		prompts = append(prompts, cat(sys, random(length-system)))
	}
	prompts, fresh = prompts[:n], prompts[n]
	for _, p := range prompts {
		s := m.NewSeq("")
		k := m.AttachPrefix(s, p)
		if err := m.Append(s, len(p)-k); err != nil {
			b.Fatal(err)
		}
		m.CachePrefix(s, p)
		m.Free(s)
	}
	if got := m.Radix().Blocks() * 16; got != n*(length-system)+system {
		b.Fatalf("tree holds %d tokens", got)
	}
	return m, prompts, fresh
}

// BenchmarkRadixMatch matches a cached 4,096-token prompt in a 1M-token
// tree: "wide" ends in a leaf of 3,584 tokens under the shared system
// prompt (two nodes); "deep" runs through 256 one-block nodes, because
// another cached prompt leaves the path after every block.
func BenchmarkRadixMatch(b *testing.B) {
	noInvariants(b)
	b.Run("wide", func(b *testing.B) {
		m, prompts, _ := radixMillion(b)
		r := m.Radix()
		i := 0
		for b.Loop() {
			blocks, _ := r.Match("", prompts[i%len(prompts)])
			if len(blocks) != 256 {
				b.Fatalf("matched %d blocks", len(blocks))
			}
			i++
		}
	})
	b.Run("deep", func(b *testing.B) {
		m, prompts, target := radixMillion(b)
		rng := rand.New(rand.NewPCG(3, 4))
		for k := range 256 { // leave target's path after k blocks
			p := cat(target[:16*k], []int32{-1}, prompts[k][16*k+1:])
			s := m.NewSeq("")
			n := m.AttachPrefix(s, p)
			if err := m.Append(s, len(p)-n); err != nil {
				b.Fatal(err)
			}
			m.CachePrefix(s, p)
			m.Free(s)
			if m.FreeBlocks() < 256 {
				m.Radix().Evict(256 + rng.IntN(16))
			}
		}
		r := m.Radix()
		if blocks, _ := r.Match("", target); len(blocks) != 255 {
			b.Fatalf("target matches %d blocks", len(blocks))
		}
		for b.Loop() {
			if blocks, _ := r.Match("", target); len(blocks) != 255 {
				b.Fatalf("matched %d blocks", len(blocks))
			}
		}
		b.ReportMetric(float64(r.Blocks()*16), "tokens_cached")
	})
}

// BenchmarkRadixInsert inserts a 4,096-token prompt into the 1M-token
// tree: a new one (the system prompt is cached; 224 blocks are adopted,
// then dropped untimed) and one already cached (a walk and compare).
func BenchmarkRadixInsert(b *testing.B) {
	noInvariants(b)
	b.Run("new", func(b *testing.B) {
		m, _, fresh := radixMillion(b)
		s := m.NewSeq("")
		if err := m.Append(s, len(fresh)); err != nil {
			b.Fatal(err)
		}
		r := m.Radix()
		for b.Loop() {
			n, existing := r.Insert("", fresh, m.Table(s))
			if existing != 32 {
				b.Fatalf("%d blocks were cached", existing)
			}
			b.StopTimer()
			r.drop(n, 0)
			b.StartTimer()
		}
	})
	b.Run("cached", func(b *testing.B) {
		m, prompts, _ := radixMillion(b)
		r := m.Radix()
		blocks, _ := r.Match("", prompts[0])
		for b.Loop() {
			if _, existing := r.Insert("", prompts[0], blocks); existing != 256 {
				b.Fatal(existing)
			}
		}
	})
}

func BenchmarkBlockHashes4096(b *testing.B) {
	noInvariants(b)
	t := toks(0, 4096)
	for b.Loop() {
		BlockHashes("model digest", t, 16)
	}
}

// BenchmarkEvictUnderPressure is one planning step of a full pool: a new
// prompt of 4 blocks does not fit (every block is cached), so the step
// evicts the least recently used leaf, plans again, commits, and caches
// the prompt in its place. The tree stays at the named size; the cost of
// a step must not grow with it.
func BenchmarkEvictUnderPressure(b *testing.B) {
	noInvariants(b)
	const prompt = 4 * 16 // tokens: 4 blocks, one leaf each
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("blocks=%d", n), func(b *testing.B) {
			m, _ := New(Config{Blocks: n})
			next := int32(0)
			tokens := make([]int32, prompt)
			fresh := func() []int32 { // a prompt no other shares
				for i := range tokens {
					tokens[i] = next
					next++
				}
				return tokens
			}
			var p Plan
			step := func() {
				s := m.NewSeq("")
				t := fresh()
				err := m.Reserve(&p, s, len(t))
				if short, ok := err.(*OutOfBlocksError); ok {
					m.Radix().Evict(short.Need - short.Free)
					p = Plan{}
					err = m.Reserve(&p, s, len(t))
				}
				if err != nil {
					b.Fatal(err)
				}
				m.Commit(&p)
				m.CachePrefix(s, t)
				m.Free(s)
			}
			for range n / 4 {
				step()
			}
			if m.FreeBlocks() != 0 || m.Radix().Blocks() != n/4*4 {
				b.Fatalf("%d free, %d cached", m.FreeBlocks(), m.Radix().Blocks())
			}
			for b.Loop() {
				step()
			}
		})
	}
}
