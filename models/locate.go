// Package models turns model names into model files and, with its
// sub-packages, files into something a backend can run: gguf/ reads and
// writes the format, synth/ makes random-weight models for tests.
package models

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrNotFound is wrapped by LocateIn when no file matches a name.
var ErrNotFound = errors.New("models: model not found")

// LocateIn returns the GGUF file a name refers to: an existing file path is
// used as it is; otherwise NAME matches NAME.gguf (case-insensitively) in
// the folders dirs (FOLIO_MODELS_PATH's). A catalog
// name (stories260k) also matches its published file's name there, and the
// file found must be the published one (size and sha256).
func LocateIn(name string, dirs []string) (string, error) {
	if e, ok := Catalog(name); ok {
		path, err := locate(strings.TrimSuffix(e.File, ".gguf"), dirs)
		if err != nil {
			return "", fmt.Errorf("%w; folio cannot download models yet: fetch %s into a folder of FOLIO_MODELS_PATH", err, e.URL)
		}
		if err := e.Verify(path); err != nil {
			return "", err
		}
		return path, nil
	}
	return locate(name, dirs)
}

func locate(name string, dirs []string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("%w: empty model name", ErrNotFound)
	}
	if st, err := os.Stat(name); err == nil && st.Mode().IsRegular() {
		return name, nil
	}
	if !strings.ContainsAny(name, `/\`) {
		want := strings.ToLower(strings.TrimSuffix(name, ".gguf")) + ".gguf"
		for _, dir := range dirs {
			entries, err := os.ReadDir(dir)
			if err != nil {
				continue
			}
			for _, e := range entries {
				if strings.ToLower(e.Name()) == want && e.Type().IsRegular() {
					return filepath.Join(dir, e.Name()), nil
				}
			}
		}
	}
	if len(dirs) == 0 {
		return "", fmt.Errorf("%w: %q is not a file; give a path to a .gguf file or set FOLIO_MODELS_PATH to folders of GGUF files", ErrNotFound, name)
	}
	return "", fmt.Errorf("%w: %q is not a file and no %s.gguf is in FOLIO_MODELS_PATH (%s)",
		ErrNotFound, name, strings.TrimSuffix(name, ".gguf"), strings.Join(dirs, string(os.PathListSeparator)))
}
