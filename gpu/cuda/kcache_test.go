package cuda

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestKernelCacheHitAndMiss(t *testing.T) {
	dir := t.TempDir()
	c, fc := kernelCache{dir: dir}, &fakeCompiler{ver: [2]int{13, 0}}
	nv := fc.compiler()
	opts := []string{"--gpu-architecture=sm_90"}
	img1, cached, err := c.build(nv, "src A", "a.cu", opts, 13000, false)
	if err != nil || cached || fc.calls != 1 {
		t.Fatalf("first build: cached %v, %d compiles, %v", cached, fc.calls, err)
	}
	img2, cached, err := c.build(nv, "src A", "a.cu", opts, 13000, false)
	if err != nil || !cached || fc.calls != 1 || string(img2) != string(img1) {
		t.Fatalf("second build: cached %v, %d compiles, %q vs %q, %v", cached, fc.calls, img2, img1, err)
	}
	// Any part of the key changing is a miss.
	for _, tc := range []struct {
		name, src string
		opts      []string
		ver       [2]int
		driver    int
	}{
		{"source", "src B", opts, [2]int{13, 0}, 13000},
		{"options", "src A", []string{"--gpu-architecture=sm_80"}, [2]int{13, 0}, 13000},
		{"nvrtc", "src A", opts, [2]int{12, 8}, 13000},
		{"driver", "src A", opts, [2]int{13, 0}, 12080},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc.ver = tc.ver
			before := fc.calls
			if _, cached, err := c.build(nv, tc.src, "a.cu", tc.opts, tc.driver, false); err != nil || cached || fc.calls != before+1 {
				t.Errorf("%s changed: cached %v, %d compiles, %v", tc.name, cached, fc.calls-before, err)
			}
		})
	}
}

func TestKernelCacheIgnoresDamagedFiles(t *testing.T) {
	dir := t.TempDir()
	c, fc := kernelCache{dir: dir}, &fakeCompiler{}
	nv := fc.compiler()
	key := cacheKey("src", nil, [2]int{}, 1)
	for name, damage := range map[string]func([]byte) []byte{
		"flipped byte": func(b []byte) []byte { b[len(b)-1] ^= 1; return b },
		"truncated":    func(b []byte) []byte { return b[:len(b)-3] },
		"no magic":     func(b []byte) []byte { return append([]byte("XXXXXXXX"), b[8:]...) },
		"empty":        func(b []byte) []byte { return nil },
	} {
		if _, _, err := c.build(nv, "src", "a.cu", nil, 1, false); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(c.path(key))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(c.path(key), damage(data), 0o644); err != nil {
			t.Fatal(err)
		}
		before := fc.calls
		img, cached, err := c.build(nv, "src", "a.cu", nil, 1, false)
		if err != nil || cached || fc.calls != before+1 || !strings.HasPrefix(string(img), "cubin") {
			t.Errorf("%s: cached %v, %d compiles, %q, %v", name, cached, fc.calls-before, img, err)
		}
		if c.get(key) == nil {
			t.Errorf("%s: the recompiled image was not stored again", name)
		}
	}
	if tmp, _ := filepath.Glob(filepath.Join(dir, "*.tmp*")); len(tmp) != 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
}

func TestKernelCacheUnwritableDirStillBuilds(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c, fc := kernelCache{dir: filepath.Join(file, "sub")}, &fakeCompiler{}
	for range 2 {
		if _, cached, err := c.build(fc.compiler(), "src", "a.cu", nil, 1, false); err != nil || cached {
			t.Fatalf("cached %v, %v", cached, err)
		}
	}
	if fc.calls != 2 {
		t.Errorf("%d compiles, want 2 (nothing cached)", fc.calls)
	}
}

func TestCompileErrorCarriesTheLog(t *testing.T) {
	fc := &fakeCompiler{fail: true}
	_, _, err := kernelCache{dir: t.TempDir()}.build(fc.compiler(), "src", "folio.cu", []string{"--gpu-architecture=sm_90"}, 1, false)
	var ce *Error
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), `identifier "x" is undefined`) || !strings.Contains(err.Error(), "sm_90") {
		t.Fatalf("got %v", err)
	}
}

func TestDefaultCacheDir(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", "/tmp/xdg")
	if got := defaultCacheDir(); got != "/tmp/xdg/folio/cuda" {
		t.Errorf("default cache dir %s", got)
	}
}
