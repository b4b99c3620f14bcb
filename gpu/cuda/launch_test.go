package cuda

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"unsafe"

	"folio/models/gguf"
)

func TestArgsPacking(t *testing.T) {
	var a args
	a.reset().ptr(0xdeadbeef00).i64(-5).i32(-7).i32(1 << 30).f32(1.5)
	if a.n != 5 {
		t.Fatalf("%d parameters", a.n)
	}
	ptrs := (*[maxArgs]unsafe.Pointer)(a.params())
	for i := range a.n {
		if ptrs[i] != unsafe.Pointer(&a.vals[i]) {
			t.Errorf("pointer %d does not point at its slot", i)
		}
	}
	// What a kernel reads: 8 bytes for a pointer or a long long, the
	// first 4 for an int or a float.
	if got := *(*uint64)(ptrs[0]); got != 0xdeadbeef00 {
		t.Errorf("pointer %#x", got)
	}
	if got := *(*int64)(ptrs[1]); got != -5 {
		t.Errorf("long long %d", got)
	}
	if got := *(*int32)(ptrs[2]); got != -7 {
		t.Errorf("int %d", got)
	}
	if got := *(*int32)(ptrs[3]); got != 1<<30 {
		t.Errorf("int %d", got)
	}
	if got := *(*float32)(ptrs[4]); got != 1.5 {
		t.Errorf("float %v", got)
	}
	a.reset().i32(3)
	if a.n != 1 || ptrs[1] != nil {
		t.Errorf("reset left %d parameters, pointer 1 %v", a.n, ptrs[1])
	}
}

func TestArgsRefuseWhatDoesNotFit(t *testing.T) {
	mustPanic(t, map[string]func(){
		"int too large": func() { new(args).i32(math.MaxInt32 + 1) },
		"17 parameters": func() {
			a := new(args)
			for range 17 {
				a.i32(1)
			}
		},
	})
}

func TestMatmulDims(t *testing.T) {
	for _, tc := range []struct {
		n, m  int
		tiled bool
		grid  [3]uint32
		block uint32
	}{
		{1, 2048, false, [3]uint32{256, 1, 1}, 128},
		{1, 2049, false, [3]uint32{257, 1, 1}, 128},
		{7, 128256, false, [3]uint32{16032, 7, 1}, 128},
		{8, 2048, true, [3]uint32{32, 1, 1}, 256},
		{512, 14336, true, [3]uint32{224, 8, 1}, 256},
		{513, 65, true, [3]uint32{2, 9, 1}, 256},
	} {
		t.Run(fmt.Sprintf("%dx%d/tiled=%v", tc.n, tc.m, tc.tiled), func(t *testing.T) {
			k, d, tiled := matmulDims(gguf.TypeQ4_K, tc.n, tc.m)
			if want := map[bool]kernel{false: kMatvecQ4_K, true: kMatmulQ4_K}[tc.tiled]; k != want {
				t.Errorf("n %d: kernel %s, want %s", tc.n, k, want)
			}
			if tiled != tc.tiled || d.grid != tc.grid || d.block != [3]uint32{tc.block, 1, 1} {
				t.Errorf("n %d, m %d: tiled %v, %v × %v; want %v, %v × %d", tc.n, tc.m, tiled, d.grid, d.block, tc.tiled, tc.grid, tc.block)
			}
			// Every output is covered by the grid.
			if tiled {
				if int(d.grid[0])*mmTile < tc.m || int(d.grid[1])*mmTile < tc.n {
					t.Errorf("n %d, m %d: tiles do not cover dst", tc.n, tc.m)
				}
			} else if int(d.grid[0])*mvWarps*mvRows < tc.m || int(d.grid[1]) != tc.n {
				t.Errorf("n %d, m %d: warps do not cover dst", tc.n, tc.m)
			}
		})
	}
}

func TestOtherDims(t *testing.T) {
	if d := getRowsDims(kGetRowsQ8_0, 3, 2048); d.grid != [3]uint32{2, 3, 1} || d.block[0] != 128 {
		t.Errorf("get_rows %v", d)
	}
	if d := getRowsDims(kGetRowsF16, 1, 1025); d.grid != [3]uint32{2, 1, 1} { // 129 runs of 8, the last of 1
		t.Errorf("get_rows of 1025 %v", d)
	}
	if d := elementwiseDims(kAdd, 257); d.grid != [3]uint32{2, 1, 1} || d.block[0] != 256 {
		t.Errorf("elementwise %v", d)
	}
	for cols, threads := range map[int]uint32{1: 32, 64: 64, 100: 128, 128: 128, 2048: 256} {
		if d := rowDims(kRMSNorm, 5, cols); d.block[0] != threads || d.grid[0] != 5 {
			t.Errorf("rows of %d: %v, want %d threads", cols, d, threads)
		}
	}
	if d := attentionDims(kAttentionF16, 32, 512); d.grid != [3]uint32{32, 512, 1} || d.block[0] != 512 {
		t.Errorf("attention %v", d)
	}
	defer func() {
		if recover() == nil {
			t.Error("a grid of 70000 rows in y did not panic")
		}
	}()
	getRowsDims(kGetRowsF32, 70000, 8)
}

func TestKernelTables(t *testing.T) {
	for typ, k := range nativeTypes {
		suffix := kernelNames[k][len("matvec_"):]
		if kernelNames[matmulKernel(typ)] != "matmul_"+suffix || kernelNames[getRowsKernel(typ)] != "get_rows_"+suffix ||
			kernelNames[dequantKernel(typ)] != "dequant_"+suffix {
			t.Errorf("%v: %s, %s, %s", typ, kernelNames[k], matmulKernel(typ), getRowsKernel(typ))
		}
		if want := typ.String(); !strings.EqualFold(suffix, want) {
			t.Errorf("%v's kernels are named %s", typ, suffix)
		}
	}
	if _, ok := nativeTypes[gguf.TypeQ5_K]; ok {
		t.Error("Q5_K has no kernel, yet is listed")
	}
}

// mustPanic checks that each function panics: shapes that disagree are
// programming errors, refused loudly.
func mustPanic(t *testing.T, cases map[string]func()) {
	t.Helper()
	for name, f := range cases {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

// kernelNodeParams is laid out as CUDA_KERNEL_NODE_PARAMS_v2.
func TestKernelNodeParamsLayout(t *testing.T) {
	var p kernelNodeParams
	if unsafe.Sizeof(p) != 72 || unsafe.Offsetof(p.params) != 40 || unsafe.Offsetof(p.extra) != 48 ||
		unsafe.Offsetof(p.kern) != 56 || unsafe.Offsetof(p.shmem) != 32 {
		t.Errorf("size %d, shmem at %d, params at %d, extra at %d, kern at %d", unsafe.Sizeof(p),
			unsafe.Offsetof(p.shmem), unsafe.Offsetof(p.params), unsafe.Offsetof(p.extra), unsafe.Offsetof(p.kern))
	}
}
