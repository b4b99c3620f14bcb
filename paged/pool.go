package paged

import (
	"errors"
	"fmt"
	"math"
)

// BlockID names a physical block of the KV pool: the backend's block index,
// the same in every layer.
type BlockID int32

// NoBlock ends the free list.
const NoBlock BlockID = -1

// DefaultBlockSize is the block size in tokens when a Config leaves it 0.
const DefaultBlockSize = 16

// ErrOutOfBlocks is wrapped by every error that says the pool has too few
// free blocks; the scheduler answers it by evicting cached prefixes or
// preempting a sequence.
var ErrOutOfBlocks = errors.New("paged: out of KV blocks")

// OutOfBlocksError says how many blocks a step needed and how many were
// free, in the pool of layer group Group (0 for a Manager of one group).
// It wraps ErrOutOfBlocks.
type OutOfBlocksError struct {
	Free, Need int
	Group      int
}

func (e *OutOfBlocksError) Error() string {
	if e.Group > 0 {
		return fmt.Sprintf("%v in layer group %d (free %d, need %d)", ErrOutOfBlocks, e.Group, e.Free, e.Need)
	}
	return fmt.Sprintf("%v (free %d, need %d)", ErrOutOfBlocks, e.Free, e.Need)
}

func (e *OutOfBlocksError) Unwrap() error { return ErrOutOfBlocks }

// BlockPool hands out the blocks of a fixed-size KV pool and counts their
// holders. The free list is threaded through next as block indices, so the
// pool is three flat slices the garbage collector never scans, and
// allocating or freeing is O(1). Freed blocks are reused first (LIFO).
//
// Invariants (checked by verify): a block is on the free list exactly when
// its ref count is 0; the list has nFree entries and no cycle.
type BlockPool struct {
	blockSize int
	refs      []int32   // refs[b]: holders of block b (tables, the radix tree, pending copies)
	next      []BlockID // next[b]: the free block after b; meaningful only while b is free
	head      BlockID   // first free block, or NoBlock
	nFree     int
}

// NewBlockPool makes a pool of nBlocks blocks of blockSize tokens, all
// free. Allocation starts at block 0.
func NewBlockPool(nBlocks, blockSize int) (*BlockPool, error) {
	if blockSize < 1 {
		return nil, fmt.Errorf("paged: block size %d tokens (want at least 1)", blockSize)
	}
	if nBlocks < 1 || nBlocks > math.MaxInt32 {
		return nil, fmt.Errorf("paged: %d blocks (want 1 to %d); give the KV cache more memory", nBlocks, math.MaxInt32)
	}
	p := &BlockPool{
		blockSize: blockSize,
		refs:      make([]int32, nBlocks),
		next:      make([]BlockID, nBlocks),
		nFree:     nBlocks,
	}
	for i := range p.next {
		p.next[i] = BlockID(i + 1)
	}
	p.next[nBlocks-1] = NoBlock
	return p, nil
}

// BlocksForBudget is the number of blocks of blockSize tokens that fit in
// budget bytes when one token's K and V, over all layers, take
// bytesPerToken bytes (gpu.KVSpec.BytesPerToken). It is 0 when not even one
// block fits.
func BlocksForBudget(budget, bytesPerToken int64, blockSize int) int {
	if budget <= 0 || bytesPerToken <= 0 || blockSize <= 0 {
		return 0
	}
	perBlock := bytesPerToken * int64(blockSize)
	if perBlock/int64(blockSize) != bytesPerToken { // overflow
		return 0
	}
	return int(min(budget/perBlock, math.MaxInt32))
}

// BlockSize is the number of tokens a block holds.
func (p *BlockPool) BlockSize() int { return p.blockSize }

// NumBlocks is the size of the pool.
func (p *BlockPool) NumBlocks() int { return len(p.refs) }

// FreeCount is the number of blocks Alloc can still hand out.
func (p *BlockPool) FreeCount() int { return p.nFree }

// Ref is the number of holders of block b (0 when it is free).
func (p *BlockPool) Ref(b BlockID) int { return int(p.refs[b]) }

// Alloc takes a free block and gives it a ref count of 1.
func (p *BlockPool) Alloc() (BlockID, error) {
	b := p.head
	if b == NoBlock {
		return NoBlock, &OutOfBlocksError{Free: 0, Need: 1}
	}
	p.head = p.next[b]
	p.next[b] = NoBlock
	p.nFree--
	p.refs[b] = 1
	p.checkInvariants()
	return b, nil
}

// Retain adds a holder to block b, which must be allocated.
func (p *BlockPool) Retain(b BlockID) {
	if p.refs[b] <= 0 {
		panic(fmt.Sprintf("paged: retain of free block %d", b))
	}
	p.refs[b]++
}

// Release drops a holder of block b and reports whether that was the last
// one, in which case b is back on the free list. Releasing a free block is
// a broken invariant and panics, naming the block.
func (p *BlockPool) Release(b BlockID) bool {
	switch r := p.refs[b]; {
	case r <= 0:
		panic(fmt.Sprintf("paged: release of block %d with ref count %d", b, r))
	case r > 1:
		p.refs[b]--
		return false
	}
	p.refs[b] = 0
	p.next[b] = p.head
	p.head = b
	p.nFree++
	p.checkInvariants()
	return true
}

// Grow makes the pool nBlocks blocks long. Blocks keep their IDs and
// holders; the new ones are free and handed out next, lowest ID first.
func (p *BlockPool) Grow(nBlocks int) error {
	old := len(p.refs)
	if nBlocks < old || nBlocks > math.MaxInt32 {
		return fmt.Errorf("paged: grow a pool of %d blocks to %d (want %d to %d)", old, nBlocks, old, math.MaxInt32)
	}
	p.refs = append(p.refs, make([]int32, nBlocks-old)...)
	p.next = append(p.next, make([]BlockID, nBlocks-old)...)
	for b := nBlocks - 1; b >= old; b-- {
		p.next[b] = p.head
		p.head = BlockID(b)
	}
	p.nFree += nBlocks - old
	p.checkInvariants()
	return nil
}

// verify checks the pool's own invariants: the free list has nFree
// distinct blocks, all with ref count 0, and every other block has a
// positive ref count.
func (p *BlockPool) verify() error {
	onList := make([]bool, len(p.refs))
	n := 0
	for b := p.head; b != NoBlock; b = p.next[b] {
		if b < 0 || int(b) >= len(p.refs) {
			return fmt.Errorf("free list holds out-of-range block %d", b)
		}
		if onList[b] {
			return fmt.Errorf("free list visits block %d twice", b)
		}
		onList[b] = true
		if p.refs[b] != 0 {
			return fmt.Errorf("free block %d has ref count %d", b, p.refs[b])
		}
		n++
	}
	if n != p.nFree {
		return fmt.Errorf("free list has %d blocks, free count says %d", n, p.nFree)
	}
	for b, r := range p.refs {
		if !onList[b] && r <= 0 {
			return fmt.Errorf("block %d is neither free nor referenced (ref count %d)", b, r)
		}
	}
	return nil
}
