package cuda

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// compiler is NVRTC as folio uses it; tests put a fake in its place.
type compiler struct {
	// Version is NVRTC's version, (0, 0) if unknown.
	Version func() (major, minor int)
	// Compile compiles the CUDA C src (named name in messages) with opts
	// into a cubin; log is NVRTC's output, which says why on failure.
	Compile func(src, name string, opts []string) (image []byte, log string, err error)
}

// kernelCache keeps compiled kernels on disk, one file per key, so that
// NVRTC runs once per source, options and versions. A file is magic, the
// sha256 of the image, then the image; a file that does not check out is
// ignored and overwritten.
type kernelCache struct {
	dir string // "" disables the cache
}

var cacheMagic = []byte("FOLIOCU1")

// defaultCacheDir is the user's cache directory's folio/cuda, else ""
// (no cache). cmd gives FOLIO_HOME's cache/cuda as Options.CacheDir.
func defaultCacheDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "folio", "cuda")
	}
	return ""
}

// cacheKey names the image of src compiled with opts by NVRTC nvrtc for a
// driver of version driverVersion: a change to any of them is a miss.
func cacheKey(src string, opts []string, nvrtc [2]int, driverVersion int) string {
	h := sha256.New()
	fmt.Fprintf(h, "src %d\n%s\nopts %q\nnvrtc %d.%d\ndriver %d\n", len(src), src, opts, nvrtc[0], nvrtc[1], driverVersion)
	return hex.EncodeToString(h.Sum(nil))
}

func (c kernelCache) path(key string) string { return filepath.Join(c.dir, key+".cubin") }

// get returns the cached image of key, or nil when there is none or the
// file is damaged.
func (c kernelCache) get(key string) []byte {
	if c.dir == "" {
		return nil
	}
	data, err := os.ReadFile(c.path(key))
	if err != nil || len(data) < len(cacheMagic)+sha256.Size || !bytes.HasPrefix(data, cacheMagic) {
		return nil
	}
	sum, image := data[len(cacheMagic):len(cacheMagic)+sha256.Size], data[len(cacheMagic)+sha256.Size:]
	if got := sha256.Sum256(image); !bytes.Equal(got[:], sum) || len(image) == 0 {
		return nil
	}
	return image
}

// put stores image under key, through a temporary file renamed into
// place so that a reader never sees half a file. A cache that cannot be
// written is not an error: the next start compiles again.
func (c kernelCache) put(key string, image []byte) {
	if c.dir == "" || os.MkdirAll(c.dir, 0o755) != nil {
		return
	}
	f, err := os.CreateTemp(c.dir, key+".tmp*")
	if err != nil {
		return
	}
	sum := sha256.Sum256(image)
	_, err = f.Write(append(append(append([]byte{}, cacheMagic...), sum[:]...), image...))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), c.path(key))
	}
	if err != nil {
		os.Remove(f.Name())
	}
}

// build returns the cubin of src for opts: from the cache when it holds a
// good copy (cached true) and force is false, else compiled now and stored.
func (c kernelCache) build(nv *compiler, src, name string, opts []string, driverVersion int, force bool) (image []byte, cached bool, err error) {
	maj, min := nv.Version()
	key := cacheKey(src, opts, [2]int{maj, min}, driverVersion)
	if image := c.get(key); image != nil && !force {
		return image, true, nil
	}
	image, log, err := nv.Compile(src, name, opts)
	if err != nil {
		return nil, false, fmt.Errorf("cuda: compiling %s with %s: %w\n%s", name, strings.Join(opts, " "), err, trimLog(log))
	}
	c.put(key, image)
	return image, false, nil
}

// trimLog keeps the first lines of a compiler log: the first errors are
// the ones that matter.
func trimLog(log string) string {
	const max = 4000
	if len(log) > max {
		return log[:max] + "\n…"
	}
	return log
}
