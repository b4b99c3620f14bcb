package cpu

import (
	"testing"

	"folio/gpu"
)

// TestRearrange: heads split out of a projection, gathered head by head
// and joined again give back the projection, and each step is the host
// reference's (gpu.Rearrangement.Apply), on one thread and on several.
func TestRearrange(t *testing.T) {
	for _, threads := range []int{1, 3} {
		b := New(threads)
		const rows, heads, d, part = 37, 5, 24, 16 // part: a head's leading elements
		x := make([]float32, rows*heads*d)
		for i := range x {
			x[i] = float32(i%997) - 400
		}
		tx, _ := b.NewTensor(rows, heads*d)
		b.Upload(tx, x)
		// split: each head's leading part into rows of their own, row-major
		// (row i's heads in turn), then back into a zeroed copy
		r := gpu.Rearrangement{Rows: rows, Heads: heads, Len: part,
			Src: gpu.Layout{Row: heads * d, Head: d}, Dst: gpu.Layout{Row: heads * part, Head: part}}
		tp, _ := b.NewTensor(rows*heads, part)
		b.Rearrange(tp, tx, r)
		want := make([]float32, rows*heads*part)
		r.Apply(want, x)
		got := make([]float32, len(want))
		b.Download(got, tp)
		for i := range want {
			if got[i] != want[i] || want[i] != x[(i/part)*d+i%part] {
				t.Fatalf("threads %d: split element %d = %v, want %v (x %v)", threads, i, got[i], want[i], x[(i/part)*d+i%part])
			}
		}
		// head-major: head j's rows together, as a matmul per head wants
		hm := gpu.Rearrangement{Rows: rows, Heads: heads, Len: part,
			Src: gpu.Layout{Row: heads * part, Head: part}, Dst: gpu.Layout{Row: part, Head: rows * part}}
		th, _ := b.NewTensor(heads*rows, part)
		b.Rearrange(th, tp, hm)
		b.Download(got, th)
		for j := range heads {
			for i := range rows {
				for e := range part {
					if g, w := got[(j*rows+i)*part+e], x[i*heads*d+j*d+e]; g != w {
						t.Fatalf("threads %d: head-major head %d row %d element %d = %v, want %v", threads, j, i, e, g, w)
					}
				}
			}
		}
		// joined back at an offset: the rest of each head keeps its zeros
		back := gpu.Rearrangement{Rows: rows, Heads: heads, Len: part,
			Src: gpu.Layout{Row: part, Head: rows * part}, Dst: gpu.Layout{Off: d - part, Row: heads * d, Head: d}}
		tz, _ := b.NewTensor(rows, heads*d)
		b.Rearrange(tz, th, back)
		z := make([]float32, rows*heads*d)
		b.Download(z, tz)
		for i := range rows {
			for j := range heads {
				for e := range d {
					w := float32(0)
					if e >= d-part {
						w = x[i*heads*d+j*d+e-(d-part)]
					}
					if g := z[i*heads*d+j*d+e]; g != w {
						t.Fatalf("threads %d: joined row %d head %d element %d = %v, want %v", threads, i, j, e, g, w)
					}
				}
			}
		}
		b.Close()
	}
}

// TestRearrangeRefuses: a run past either tensor's end is a programming
// error, caught before anything is written.
func TestRearrangeRefuses(t *testing.T) {
	b := New(1)
	defer b.Close()
	dst, _ := b.NewTensor(4, 8)
	src, _ := b.NewTensor(4, 8)
	for _, r := range []gpu.Rearrangement{
		{Rows: 4, Heads: 2, Len: 4, Dst: gpu.Layout{Off: 1, Row: 8, Head: 4}, Src: gpu.Layout{Row: 8, Head: 4}},
		{Rows: 5, Heads: 1, Len: 8, Dst: gpu.Layout{Row: 8}, Src: gpu.Layout{Row: 6}},
		{Rows: -1, Heads: 1, Len: 8},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%+v: no panic", r)
				}
			}()
			b.Rearrange(dst, src, r)
		}()
	}
}
