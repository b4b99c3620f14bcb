//go:build !cgo

package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Built without cgo, OpenRegistry and OpenKV say there is no SQLite and why, and creates
// nothing; CI runs this with CGO_ENABLED=0.
func TestOpenWithoutCgo(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	_, err := OpenRegistry(home, RegistryOptions{})
	if !errors.Is(err, ErrNoSQLite) || !strings.Contains(err.Error(), "built without cgo") {
		t.Fatalf("OpenRegistry = %v, want ErrNoSQLite", err)
	}
	if _, err := OpenKV(home, KVOptions{}); !errors.Is(err, ErrNoSQLite) {
		t.Fatalf("OpenKV = %v, want ErrNoSQLite", err)
	}
	if _, err := os.Stat(home); !os.IsNotExist(err) {
		t.Errorf("the home was created: %v", err)
	}
}
