package paged

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
)

// BlockHash names the contents of a full block in context: the SHA-256 of
// its parent block's hash, the extra key and the block's token IDs. Equal
// hashes mean the same tokens after the same prefix under the same key,
// so the persistence layer can store and find K/V blocks by it.
type BlockHash [32]byte

func (h BlockHash) String() string { return hex.EncodeToString(h[:]) }

// HashBlock is the hash of the block of tokens that follows the block
// hashed parent (the zero BlockHash for the first block), under extra.
// The bytes hashed are parent, len(extra) as a little-endian uint32,
// extra, then each token as a little-endian int32.
func HashBlock(parent BlockHash, extra string, tokens []int32) BlockHash {
	return hashBlock(make([]byte, 0, 36+len(extra)+4*len(tokens)), parent, extra, tokens)
}

// BlockHashes is the chain of hashes of the full blocks of tokens (a
// partial last block has none), blockSize tokens each.
func BlockHashes(extra string, tokens []int32, blockSize int) []BlockHash {
	hs := make([]BlockHash, len(tokens)/blockSize)
	buf := make([]byte, 0, 36+len(extra)+4*blockSize)
	var parent BlockHash
	for i := range hs {
		parent = hashBlock(buf, parent, extra, tokens[i*blockSize:(i+1)*blockSize])
		hs[i] = parent
	}
	return hs
}

func hashBlock(buf []byte, parent BlockHash, extra string, tokens []int32) BlockHash {
	buf = append(buf[:0], parent[:]...)
	buf = binary.LittleEndian.AppendUint32(buf, uint32(len(extra)))
	buf = append(buf, extra...)
	for _, t := range tokens {
		buf = binary.LittleEndian.AppendUint32(buf, uint32(t))
	}
	return sha256.Sum256(buf)
}
