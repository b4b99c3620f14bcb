package place

import (
	"errors"
	"strings"
	"testing"

	"folio/gpu"
	"folio/gpu/cpu"
	"folio/models/gguf"
)

// fakeDevice is a CPU backend standing in for a GPU of free bytes.
type fakeDevice struct {
	*cpu.Backend
	name   string
	free   int64
	closed *int
}

func (d *fakeDevice) Free() (int64, error) { return d.free, nil }
func (d *fakeDevice) Used() int64          { return 0 }
func (d *fakeDevice) Identity() string     { return "fake " + d.name }
func (d *fakeDevice) DeviceName() string   { return d.name }
func (d *fakeDevice) Close() error         { *d.closed++; return d.Backend.Close() }

// fakeKind is a kind named name whose device has free bytes (openErr: none
// opens), for a model of need; opens and closes count its devices.
type fakeKind struct {
	name          string
	free          int64
	openErr       error
	opens, closes int
	autoDeclines  bool // like Vulkan's CPU device
}

func (k *fakeKind) kind(need Need) Kind {
	return Kind{
		Name: k.name,
		Open: func(auto bool) (Device, error) {
			if k.openErr != nil {
				return nil, k.openErr
			}
			if auto && k.autoDeclines {
				return nil, errors.New(k.name + ": only a CPU device")
			}
			k.opens++
			return &fakeDevice{Backend: cpu.New(1), name: k.name + " GPU", free: k.free, closed: &k.closes}, nil
		},
		Need: func(Device) Need { return need },
		CheckKV: func(s gpu.KVSpec) error {
			if s.Type == gguf.TypeQ8_0 {
				return gpu.ErrUnsupported
			}
			return nil
		},
	}
}

const gb = 1 << 30

var model = Need{Weights: 10 * gb, LayerWeights: 8 * gb, Layers: 16, KV: 2 * gb, Scratch: gb / 2}

func host() gpu.Backend { return cpu.New(1) }

// FOLIO_GPU=auto takes the kinds in order: the first whose device opens
// and takes the model (whole or split), else the CPU with a notice giving
// each kind's reason; a kind's name forces it and makes its failure the
// error; cpu opens nothing.
func TestChoose(t *testing.T) {
	noDriver := errors.New("a: no driver")
	for _, tc := range []struct {
		mode         string
		a, b         fakeKind
		want         string // the device's name, "split", or "" for the CPU
		notice, fail string
	}{
		{mode: "auto", a: fakeKind{free: 20 * gb}, b: fakeKind{free: 20 * gb}, want: "a GPU"},
		{mode: "", a: fakeKind{openErr: noDriver}, b: fakeKind{free: 20 * gb}, want: "b GPU"},
		{mode: "auto", a: fakeKind{free: gb}, b: fakeKind{free: 20 * gb}, want: "b GPU"}, // a too small for even one layer
		{mode: "auto", a: fakeKind{free: 8 * gb}, b: fakeKind{free: 20 * gb}, want: "split", notice: "8 of 16 layers on a GPU"},
		{mode: "auto", a: fakeKind{openErr: noDriver}, b: fakeKind{free: 20 * gb, autoDeclines: true},
			notice: "a: no driver; b: only a CPU device; computing on the CPU"},
		{mode: "b", a: fakeKind{free: 20 * gb}, b: fakeKind{free: 20 * gb, autoDeclines: true}, want: "b GPU"},
		{mode: "a", a: fakeKind{openErr: noDriver}, b: fakeKind{free: 20 * gb}, fail: "a: no driver (FOLIO_GPU=a; unset it"},
		{mode: "a", a: fakeKind{free: gb}, b: fakeKind{free: 20 * gb}, fail: "smaller quantization"},
		{mode: "cpu", a: fakeKind{free: 20 * gb}, b: fakeKind{free: 20 * gb}},
		{mode: "gpu", fail: `FOLIO_GPU="gpu": use cpu, auto, a, b`},
	} {
		t.Run(tc.mode+"/"+tc.want, func(t *testing.T) {
			tc.a.name, tc.b.name = "a", "b"
			be, notice, err := Choose(tc.mode, []Kind{tc.a.kind(model), tc.b.kind(model)}, host, nil)
			if tc.fail != "" {
				if err == nil || !strings.Contains(err.Error(), tc.fail) || be != nil {
					t.Fatalf("%v, %v: want an error with %q", be, err, tc.fail)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			got := ""
			switch b := be.(type) {
			case *fakeDevice:
				got = b.name
			case *Split:
				got = "split"
			}
			if got != tc.want || (tc.notice == "") != (notice == "") || !strings.Contains(notice, tc.notice) {
				t.Errorf("on %q with notice %q, want %q with %q", got, notice, tc.want, tc.notice)
			}
			if be != nil {
				be.Close()
			}
			for _, k := range []fakeKind{tc.a, tc.b} {
				if k.opens != k.closes {
					t.Errorf("%s: %d devices opened, %d closed", k.name, k.opens, k.closes)
				}
			}
		})
	}
}

// A device that opens but cannot serve the K/V pool is an error whatever
// the mode (F16 would load there), not a silent fall to the next kind.
func TestChooseRefusesKV(t *testing.T) {
	need := model
	need.KVSpec = gpu.KVSpec{Layers: 16, Blocks: 4, BlockSize: 16, KVHeads: 2, HeadDim: 64, Type: gguf.TypeQ8_0}
	for _, mode := range []string{"auto", "a"} {
		a, b := fakeKind{name: "a", free: 20 * gb}, fakeKind{name: "b", free: 20 * gb}
		be, _, err := Choose(mode, []Kind{a.kind(need), b.kind(need)}, host, nil)
		if !errors.Is(err, gpu.ErrUnsupported) || be != nil || b.opens != 0 || a.closes != a.opens {
			t.Errorf("%s: %v, %v; b opened %d", mode, be, err, b.opens)
		}
	}
}

// The first-load check runs on the device before the model: a failure
// sends auto to the next kind (its reason in the notice, or not when the
// check said so already: quiet) and is the error of a forced kind.
func TestChooseVets(t *testing.T) {
	bad := errors.New("first-run check failed")
	vet := func(quiet bool) Vet {
		return func(dev gpu.Backend, id string) (bool, error) {
			if strings.HasPrefix(id, "fake a") {
				return quiet, bad
			}
			return false, nil
		}
	}
	a, b := fakeKind{name: "a", free: 20 * gb}, fakeKind{name: "b", free: 20 * gb}
	be, notice, err := Choose("auto", []Kind{a.kind(model), b.kind(model)}, host, vet(false))
	if err != nil || notice != "" || be.(*fakeDevice).name != "b GPU" {
		t.Errorf("auto past a failing device: %v, %v, %q", be, err, notice)
	}
	be.Close()
	a.opens, a.closes = 0, 0
	be, notice, err = Choose("auto", []Kind{a.kind(model)}, host, vet(false))
	if be != nil || err != nil || !strings.Contains(notice, "first-run check failed; computing on the CPU") {
		t.Errorf("auto, the failing device alone: %v, %v, %q", be, err, notice)
	}
	if be, notice, err = Choose("auto", []Kind{a.kind(model)}, host, vet(true)); be != nil || err != nil || notice != "" {
		t.Errorf("auto, said before: %v, %v, %q; want the CPU quietly", be, err, notice)
	}
	if _, _, err = Choose("a", []Kind{a.kind(model)}, host, vet(true)); !errors.Is(err, bad) {
		t.Errorf("forced: %v", err)
	}
	if a.opens != a.closes {
		t.Errorf("%d opened, %d closed", a.opens, a.closes)
	}
}
