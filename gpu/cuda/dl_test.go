//go:build linux || darwin

package cuda

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestDlopenFirstSaysWhy(t *testing.T) {
	_, err := dlopenFirst("libnothing", []string{"libfolio-no-such-lib.so.7", filepath.Join(t.TempDir(), "*.so")})
	if err == nil || !strings.Contains(err.Error(), "libnothing") || !strings.Contains(err.Error(), "libfolio-no-such-lib.so.7") {
		t.Fatalf("got %v", err)
	}
}
