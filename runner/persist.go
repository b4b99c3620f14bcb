package runner

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"

	"folio/gpu"
	"folio/paged"
)

// PrefixStore keeps full K/V blocks across restarts (store.KVStore is the
// implementation). Blocks are keyed by the model's fingerprint and their
// chained block hash; loading verifies the stored token IDs and a
// checksum, so a hash alone is never trusted.
type PrefixStore interface {
	// HasBlocks is how many leading hashes are stored.
	HasBlocks(fp string, hashes [][32]byte) int
	// LoadBlock fills dst with the block's bytes, or fails (ErrCorrupt,
	// ErrNotFound, a token mismatch): the caller then recomputes.
	LoadBlock(fp string, hash [32]byte, tokens []int32, dst []byte) error
	// SaveBlock queues a block for writing and returns at once; it owns
	// data from then on.
	SaveBlock(fp string, hash, parent [32]byte, tokens []int32, data []byte, dtype string)
}

// PrefixFetcher is a PrefixStore with a tier beyond HasBlocks's reach (a
// store shared over the network): FetchBlocks counts the leading hashes
// it can load, asking that tier for the rest of the chain in one round
// trip, and LoadBlock then loads them. Admission calls it once per
// sequence, on the engine's loop, so its deadline bounds the stall.
type PrefixFetcher interface {
	FetchBlocks(fp string, hashes [][32]byte) int
}

// Fingerprint names everything that changes a model's K/V bytes: the
// weights (the file's digest), the architecture and its shapes, the rope
// settings, the K/V type and the block size. Persisted blocks of one
// fingerprint are never used under another.
func Fingerprint(weightsDigest string, m *Model) string {
	h := sha256.New()
	a := m.Arch
	spec := m.KV.Spec()
	fmt.Fprintf(h, "folio-kv-v1\x00%s\x00%s\x00%d %d %d %d %d %d\x00rope %d %v %v %v\x00kv %v %d\x00",
		weightsDigest, a.Arch, a.Layers, a.Dim, a.Heads, a.KVHeads, a.HeadDim, a.FFN,
		a.Rope.Dims, math.Float32bits(a.Rope.Base), math.Float32bits(a.Rope.Scale), a.Rope.Neox,
		spec.Type, spec.BlockSize)
	for _, f := range a.Rope.Factors {
		binary.Write(h, binary.LittleEndian, math.Float32bits(f))
	}
	if len(m.Caches) > 1 { // a block's bytes are each layer group's in turn
		fmt.Fprintf(h, "\x00groups %v %v", m.Groups.Windows, m.Groups.Of)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// persistence is the engine's link to a PrefixStore.
type persistence struct {
	store PrefixStore
	fp    string
	bio   gpu.BlockIO
	dtype string
	buf   []byte // one block, for loads
}

// restore extends s, which holds only its cached prefix, with the
// following full blocks of its prompt that the store has: each is loaded
// into a fresh block. It stops at the first one that fails to load.
func (e *Engine) restore(s *sequence) {
	p := e.persist
	bs := e.pm.BlockSize()
	full := (len(s.tokens) - 1) / bs
	have := s.computed / bs
	if p == nil || full <= have {
		return
	}
	s.hashUpTo(full, bs)
	hashes := make([][32]byte, full-have)
	for i := range hashes {
		hashes[i] = s.hashes[have+i]
	}
	var n int
	if f, ok := p.store.(PrefixFetcher); ok {
		n = f.FetchBlocks(p.fp, hashes)
	} else {
		n = p.store.HasBlocks(p.fp, hashes)
	}
	loaded := 0
	for i := range n {
		b := have + i
		if err := e.pm.Append(s.id, bs); err != nil {
			break // no room: the rest is computed
		}
		err := p.store.LoadBlock(p.fp, s.hashes[b], s.tokens[b*bs:(b+1)*bs], p.buf)
		if err != nil {
			e.pm.Truncate(s.id, b*bs)
			break
		}
		e.blockIO(s.id, b, p.buf, p.bio.WriteBlock)
		loaded++
	}
	if loaded == 0 {
		return
	}
	s.computed = (have + loaded) * bs
	s.saved = have + loaded
	s.restored += loaded * bs
	if !e.opt.NoPrefixCache {
		e.pm.CacheResumable(s.id, s.tokens[:s.computed])
	}
}

// blockIO reads or writes (io: BlockIO's ReadBlock or WriteBlock) block b
// of sequence s in every layer group, as consecutive parts of buf. It
// reports false, doing nothing, when a sliding group has let go of the
// block.
func (e *Engine) blockIO(s paged.SeqID, b int, buf []byte, io func(gpu.KVCache, int32, []byte)) bool {
	for g := range e.m.Caches {
		if e.pm.TableIn(s, g)[b] == paged.NoBlock {
			return false
		}
	}
	for g, kv := range e.m.Caches {
		n := kv.Spec().BlockBytes()
		io(kv, int32(e.pm.TableIn(s, g)[b]), buf[:n])
		buf = buf[n:]
	}
	return true
}

// save writes behind the full blocks of s that the store does not have
// yet.
func (e *Engine) save(s *sequence) {
	p := e.persist
	bs := e.pm.BlockSize()
	full := s.computed / bs
	if p == nil || full <= s.saved {
		return
	}
	s.hashUpTo(full, bs)
	for b := s.saved; b < full; b++ {
		if p.store.HasBlocks(p.fp, [][32]byte{s.hashes[b]}) == 1 {
			continue
		}
		var parent [32]byte
		if b > 0 {
			parent = s.hashes[b-1]
		}
		data := make([]byte, len(p.buf))
		if !e.blockIO(s.id, b, data, p.bio.ReadBlock) {
			// a sliding group let go of it before it was saved: the
			// store keeps the chain up to here, and the rest is computed
			s.saved = b
			return
		}
		p.store.SaveBlock(p.fp, s.hashes[b], parent, append([]int32(nil), s.tokens[b*bs:(b+1)*bs]...), data, p.dtype)
	}
	s.saved = full
}

// hashUpTo extends s.hashes to the first n full blocks of its tokens.
func (s *sequence) hashUpTo(n, bs int) {
	for i := len(s.hashes); i < n; i++ {
		var parent paged.BlockHash
		if i > 0 {
			parent = s.hashes[i-1]
		}
		s.hashes = append(s.hashes, paged.HashBlock(parent, s.req.extra, s.tokens[i*bs:(i+1)*bs]))
	}
}
