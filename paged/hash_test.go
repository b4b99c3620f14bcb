package paged

import (
	"crypto/sha256"
	"encoding/binary"
	"testing"
)

func TestBlockHashes(t *testing.T) {
	tokens := toks(1, 11) // two full blocks of 4 and 2 tokens
	hs := BlockHashes("digest", tokens, 4)
	if len(hs) != 2 {
		t.Fatalf("%d hashes for 2 full blocks", len(hs))
	}
	// The first block, spelled out: zero parent, key length, key, tokens.
	var buf []byte
	buf = append(buf, make([]byte, 32)...)
	buf = binary.LittleEndian.AppendUint32(buf, 6)
	buf = append(buf, "digest"...)
	for _, tk := range tokens[:4] {
		buf = binary.LittleEndian.AppendUint32(buf, uint32(tk))
	}
	if hs[0] != BlockHash(sha256.Sum256(buf)) {
		t.Errorf("first block hash %v", hs[0])
	}
	if hs[1] != HashBlock(hs[0], "digest", tokens[4:8]) {
		t.Error("the chain does not follow the parent")
	}
	for name, other := range map[string]BlockHash{
		"other key":             BlockHashes("salt", tokens, 4)[1],
		"other first block":     BlockHashes("digest", cat([]int32{9}, tokens[1:]), 4)[1],
		"key moved into tokens": HashBlock(BlockHash{}, "", tokens[:4]),
	} {
		if other == hs[1] || other == hs[0] {
			t.Errorf("%s gives the same hash", name)
		}
	}
}
