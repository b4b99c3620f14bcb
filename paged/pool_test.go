package paged

import (
	"errors"
	"slices"
	"testing"
)

func TestPoolAllocFreeOrder(t *testing.T) {
	p, err := NewBlockPool(4, 16)
	if err != nil {
		t.Fatal(err)
	}
	var got []BlockID
	for range 4 {
		b, err := p.Alloc()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, b)
	}
	if want := []BlockID{0, 1, 2, 3}; !slices.Equal(got, want) {
		t.Fatalf("allocated %v, want %v", got, want)
	}
	_, err = p.Alloc()
	var oob *OutOfBlocksError
	if !errors.As(err, &oob) || !errors.Is(err, ErrOutOfBlocks) || *oob != (OutOfBlocksError{Free: 0, Need: 1}) {
		t.Fatalf("Alloc of a full pool: %v", err)
	}
	p.Retain(2)
	if p.Release(2) || p.Ref(2) != 1 {
		t.Fatalf("release of a block held twice freed it (ref %d)", p.Ref(2))
	}
	if !p.Release(1) || !p.Release(2) || p.FreeCount() != 2 {
		t.Fatalf("last releases did not free (free count %d)", p.FreeCount())
	}
	// LIFO: the block freed last comes back first.
	if b, _ := p.Alloc(); b != 2 {
		t.Fatalf("Alloc after freeing 1 then 2 gave %d, want 2", b)
	}
	if err := p.verify(); err != nil {
		t.Fatal(err)
	}
}

func TestPoolReleaseBelowZeroPanics(t *testing.T) {
	p, _ := NewBlockPool(4, 16)
	defer func() {
		if r := recover(); r != "paged: release of block 3 with ref count 0" {
			t.Fatalf("panic %v", r)
		}
	}()
	p.Release(3)
}

func TestPoolRetainFreePanics(t *testing.T) {
	p, _ := NewBlockPool(4, 16)
	defer func() {
		if r := recover(); r != "paged: retain of free block 1" {
			t.Fatalf("panic %v", r)
		}
	}()
	p.Retain(1)
}

func TestBlocksForBudget(t *testing.T) {
	const llama8B = 2 * 32 * 8 * 128 * 2 // F16 K and V of 32 layers × 8 heads × 128: 128 KiB a token
	for _, c := range []struct {
		name          string
		budget, perTk int64
		bs, want      int
	}{
		{"8 GiB of llama-3-8B", 8 << 30, llama8B, 16, 4096},
		{"block size 32 halves N", 8 << 30, llama8B, 32, 2048},
		{"rounds down", 16*llama8B*3 - 1, llama8B, 16, 2},
		{"less than a block", llama8B, llama8B, 16, 0},
		{"no budget", 0, llama8B, 16, 0},
		{"overflowing block bytes", 1 << 62, 1 << 62, 16, 0},
	} {
		if got := BlocksForBudget(c.budget, c.perTk, c.bs); got != c.want {
			t.Errorf("%s: %d blocks, want %d", c.name, got, c.want)
		}
	}
}

func TestNewBlockPoolErrors(t *testing.T) {
	if _, err := NewBlockPool(0, 16); err == nil {
		t.Error("a pool of 0 blocks")
	}
	if _, err := NewBlockPool(4, 0); err == nil {
		t.Error("a block size of 0")
	}
}
