package models

import (
	"fmt"
	"strings"
)

// CatalogEntry is a published GGUF file folio knows by a friendly name.
type CatalogEntry struct {
	Name   string // what users type: "stories260k"
	File   string // the published file's name
	URL    string // where it is published
	Size   int64
	SHA256 string // of the published file, hex
}

// catalog is the built-in list of friendly names.
var catalog = []CatalogEntry{{
	Name:   "stories260k",
	File:   "stories260K.gguf",
	URL:    "https://huggingface.co/ggml-org/models/resolve/main/tinyllamas/stories260K.gguf",
	Size:   1185376,
	SHA256: "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d",
}}

// Catalog returns the entry of a friendly name (case-insensitive).
func Catalog(name string) (CatalogEntry, bool) {
	for _, e := range catalog {
		if strings.EqualFold(e.Name, name) {
			return e, true
		}
	}
	return CatalogEntry{}, false
}

// Verify checks that the file at path is the published one: its size and
// sha256.
func (e CatalogEntry) Verify(path string) error {
	got, n, err := FileDigest(path)
	if err != nil {
		return err
	}
	if n != e.Size || got != e.SHA256 {
		return fmt.Errorf("models: %s is not the published %s (%d bytes, sha256 %s; want %d bytes, sha256 %s): replace it with a fresh download of %s",
			path, e.File, n, got, e.Size, e.SHA256, e.URL)
	}
	return nil
}
