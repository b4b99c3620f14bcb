package store

import (
	"crypto/sha256"
	"encoding/binary"
	"testing"
)

const benchBlock = 512 << 10

// BenchmarkSaveBlock is write-behind throughput: 512 KiB blocks saved and
// written (Flush every 32 blocks keeps the queue from dropping).
func BenchmarkSaveBlock(b *testing.B) {
	s := openTest(b, "", KVOptions{MaxBytes: 1 << 40, QueueBytes: 1 << 30})
	data := makeBlock(0, benchBlock).data // never modified, so shared by all saves
	tokens := makeBlock(0, 0).tokens
	b.SetBytes(benchBlock)
	i := 0
	for b.Loop() {
		hash := sha256.Sum256(binary.LittleEndian.AppendUint64(nil, uint64(i)))
		s.SaveBlock(testFP, hash, [32]byte{}, tokens, data, "f16")
		if i++; i%32 == 0 {
			s.Flush()
		}
	}
	s.Flush()
	if st := s.KVStats(""); st.Dropped != 0 || st.Blocks != i {
		b.Fatalf("KVStats = %+v after %d saves", st, i)
	}
}

// BenchmarkLoadBlock is the latency of one 512 KiB load (query, copy,
// token check, checksum) over 64 stored blocks.
func BenchmarkLoadBlock(b *testing.B) {
	s := openTest(b, "", KVOptions{MaxBytes: 1 << 40})
	blocks := make([]block, 64)
	for i := range blocks {
		blocks[i] = makeBlock(i, benchBlock)
		save(s, testFP, blocks[i])
	}
	s.Flush()
	dst := make([]byte, benchBlock)
	b.SetBytes(benchBlock)
	i := 0
	for b.Loop() {
		bl := blocks[i%len(blocks)]
		if err := s.LoadBlock(testFP, bl.hash, bl.tokens, dst); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkHasBlocks is the request-path lookup of a 256-block prompt.
func BenchmarkHasBlocks(b *testing.B) {
	s := openTest(b, "", KVOptions{MaxBytes: 1 << 40})
	blocks := make([]block, 256)
	for i := range blocks {
		blocks[i] = makeBlock(i, 16)
		save(s, testFP, blocks[i])
	}
	s.Flush()
	hs := hashes(blocks...)
	for b.Loop() {
		if s.HasBlocks(testFP, hs) != len(hs) {
			b.Fatal("missing blocks")
		}
	}
}
