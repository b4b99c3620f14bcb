package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// A model name may also be a path to a GGUF file (folio run ./model.gguf
// talks to a running server with it). Over HTTP that would let any client
// make the server open, hash and parse any file it can read, so a name
// that is a file is accepted
//
//   - from folio run's own in-process server: the file its user named;
//   - from another program of this machine (loopback) when the file's name
//     ends in .gguf: no endpoint reads /etc/passwd or folio.db as a model;
//   - never from the network, which gets model names only.
//
// A web page on this machine cannot use the first rule: the guard refuses
// its Origin (guard.go) and DNS rebinding (Host).

// modelFileName returns the file a model name would open as a path, as
// the library registry resolves it (models.LocateIn: the name without its
// :latest tag, when it is a regular file), or "" when the name is not one.
func modelFileName(name string) string {
	base := NormalizeName(name)
	if b, tag, _ := strings.Cut(base, ":"); tag == "latest" {
		base = b
	}
	if st, err := os.Stat(base); err == nil && st.Mode().IsRegular() {
		return base
	}
	return ""
}

// checkModelName refuses a model name that is a path to a file the
// request may not open (the rules above). Names that are not files pass:
// the registry decides whether they exist.
func checkModelName(ctx context.Context, name string) error {
	p := modelFileName(name)
	if p == "" {
		return nil
	}
	switch peerOf(ctx) {
	case peerProcess:
		return nil
	case peerNetwork:
		return fmt.Errorf("%w: model %q is a file path: this server takes paths only from its own machine; "+
			"name a model of its library or registry (folio create NAME on that machine registers a file)", errForbidden, name)
	}
	if !strings.EqualFold(filepath.Ext(p), ".gguf") {
		return fmt.Errorf("%w: model %q is a file that is not a .gguf file: name a model, or give a path to a GGUF file", errBadRequest, name)
	}
	return nil
}

// looksLikePath reports whether /api/create's from names a file rather
// than a model: over the API a create starts from a model or from blobs
// uploaded to /api/blobs, never from a file of the server's machine.
func looksLikePath(from string) bool {
	if from == "" {
		return false
	}
	if filepath.IsAbs(from) || strings.HasPrefix(from, "~") || strings.HasPrefix(from, ".") || strings.ContainsRune(from, '\\') {
		return true
	}
	st, err := os.Stat(from)
	return err == nil && !st.IsDir()
}
