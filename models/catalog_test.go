package models

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"folio/internal/fixtures"
)

func TestLocateCatalog(t *testing.T) {
	shared := fixtures.Models(t)
	path, err := LocateIn("Stories260K", []string{shared})
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(path) != "stories260K.gguf" {
		t.Errorf("Locate gave %s", path)
	}

	empty := t.TempDir()
	_, err = LocateIn("stories260k", []string{empty})
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "huggingface.co/ggml-org/models") {
		t.Errorf("missing file: got %v, want ErrNotFound naming where to download it", err)
	}

	data, err := os.ReadFile(filepath.Join(shared, "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-1] ^= 1
	if err := os.WriteFile(filepath.Join(empty, "stories260K.gguf"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LocateIn("stories260k", []string{empty}); err == nil || !strings.Contains(err.Error(), "not the published") {
		t.Errorf("altered file: got %v, want a sha256 mismatch", err)
	}
}
