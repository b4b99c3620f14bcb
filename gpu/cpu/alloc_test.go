package cpu

import (
	"testing"
	"unsafe"
)

// Arena pieces are 64-byte aligned, zeroed and apart; large ones start on
// a huge page.
func TestArena(t *testing.T) {
	var a arena
	addr := func(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }
	var prev []byte
	for _, n := range []int{1, 100, 64, 4096, 3 << 20, 5, arenaChunk / 2, 17} {
		b := a.alloc(n)
		if len(b) != n || cap(b) != n {
			t.Fatalf("alloc(%d): len %d cap %d", n, len(b), cap(b))
		}
		if addr(b)%64 != 0 {
			t.Fatalf("alloc(%d) at %#x, not 64-byte aligned", n, addr(b))
		}
		if n >= arenaChunk/2 && addr(b)%hugePage != 0 {
			t.Fatalf("alloc(%d) at %#x, not on a huge page", n, addr(b))
		}
		for i, v := range b {
			if v != 0 {
				t.Fatalf("alloc(%d)[%d] = %d", n, i, v)
			}
		}
		for i := range b {
			b[i] = 0xff
		}
		if prev != nil {
			p0, p1, b0 := addr(prev), addr(prev)+uintptr(len(prev)), addr(b)
			if b0 < p1 && b0+uintptr(n) > p0 {
				t.Fatalf("alloc(%d) overlaps the piece before it", n)
			}
		}
		prev = b
	}
}
