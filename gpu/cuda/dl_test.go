//go:build linux || darwin

package cuda

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// Every path is tried and reported, with its own error, not only the
// first; the error's line names the first and counts the rest.
func TestDlopenFirstReportsEveryAttempt(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "libbroken.so.1")
	if err := os.WriteFile(bad, []byte("not an ELF file"), 0o644); err != nil {
		t.Fatal(err)
	}
	names := []string{"libfolio-no-such-lib.so.7", filepath.Join(dir, "*.so"), filepath.Join(dir, "libbroken.so*")}
	_, tried, err := dlopenFirst("libnothing", names)
	if err == nil || !strings.Contains(err.Error(), "libnothing") || !strings.Contains(err.Error(), "libfolio-no-such-lib.so.7") ||
		!strings.Contains(err.Error(), "2 more paths tried") {
		t.Fatalf("error %v", err)
	}
	want := []string{"libfolio-no-such-lib.so.7", filepath.Join(dir, "*.so"), bad}
	if len(tried) != len(want) {
		t.Fatalf("%d attempts %+v, want %d", len(tried), tried, len(want))
	}
	for i, a := range tried {
		if a.Path != want[i] || a.Err == "" {
			t.Errorf("attempt %d: %+v, want %s with its error", i, a, want[i])
		}
	}
	if !strings.Contains(tried[1].Err, "no file matches") {
		t.Errorf("the empty glob says %q", tried[1].Err)
	}
	if tried[2].Err == tried[0].Err {
		t.Errorf("the broken file's error %q is the missing file's", tried[2].Err)
	}
}

// The driver and the toolkit are looked for in the library folder of the
// machine's architecture, arm64 (GH200, DGX Spark) as well as x86_64.
func TestLibDirs(t *testing.T) {
	for goarch, want := range map[string]string{
		"amd64": "/usr/lib/x86_64-linux-gnu", "arm64": "/usr/lib/aarch64-linux-gnu", "riscv64": ""} {
		if got := libDirFor(goarch); got != want {
			t.Errorf("libDirFor(%s) = %q, want %q", goarch, got, want)
		}
	}
	d := libDirFor(runtime.GOARCH)
	if d == "" {
		t.Skipf("no library folder known for %s", runtime.GOARCH)
	}
	if !slices.Contains(driverNames, d+"/libcuda.so.1") || !slices.Contains(cudaDirs(nil), d) {
		t.Errorf("%s is not searched: driver %v, toolkit %v", d, driverNames, cudaDirs(nil))
	}
}
