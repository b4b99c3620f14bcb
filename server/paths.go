package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"folio/models"
)

// A model name may also be a path to a GGUF file (folio run ./model.gguf
// talks to a running server with it). Over HTTP that would let any client
// make the server open, hash and parse any file it can read, so a name
// that is a file is accepted
//
//   - from folio run's own in-process server: the file its user named;
//   - from another program of this machine (loopback) when the file's name
//     ends in .gguf and the file it leads to, after every link, is one the
//     server may read as a model (allowedTarget): a .gguf file, a file of
//     a FOLIO_MODELS_PATH folder or a blob of FOLIO_HOME. No endpoint
//     reads /etc/passwd or folio.db as a model, by name or through a link;
//   - never from the network, which gets model names only: a name that
//     looks like a path (absolute, ./, ../, ~, a backslash) is 403 whether
//     or not the file exists, and any other name is never opened as a file.
//
// A name refused by these rules gets the answer of a missing model,
// `model "x" not found`, which names no folder: a client cannot tell a
// file it may not open from one that does not exist.
//
// A web page on this machine cannot use the second rule: the guard
// refuses its Origin (guard.go) and DNS rebinding (Host).

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

// resolveModel finds the model a request names under the rules above.
// ctx ends the hashing of a file named by path when the request ends.
func resolveModel(ctx context.Context, cfg *Config, name string) (ModelEntry, error) {
	target, err := checkModelName(ctx, cfg, name)
	if err != nil {
		return ModelEntry{}, err
	}
	ent, err := cfg.Registry.Resolve(ctx, target)
	if errors.Is(err, ErrModelNotFound) || errors.Is(err, models.ErrNotFound) {
		return ModelEntry{}, notFound(name)
	}
	return ent, err
}

// checkModelName applies the rules above to name and returns what to
// resolve: name itself, or for a path the file it leads to (links
// resolved once, here, so that a link changed after the check is not
// followed again).
func checkModelName(ctx context.Context, cfg *Config, name string) (string, error) {
	peer := peerOf(ctx)
	if peer == peerProcess {
		return name, nil
	}
	if peer == peerNetwork && looksLikeFilePath(name) {
		return "", fmt.Errorf("%w: model %.200q is a file path: this server takes paths only from its own machine; "+
			"name a model of its library or registry (folio create NAME on that machine registers a file)", errForbidden, name)
	}
	p := modelFileName(name)
	if p == "" {
		return name, nil
	}
	if peer == peerNetwork || !strings.EqualFold(filepath.Ext(p), ".gguf") {
		return "", notFound(name)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil || !cfg.allowedTarget(real) {
		return "", notFound(name)
	}
	return real, nil
}

// allowedTarget reports whether a loopback client may have the server
// read the file real (links resolved) as a model: a .gguf file, a file
// inside a folder of FOLIO_MODELS_PATH, or a blob of FOLIO_HOME.
func (c *Config) allowedTarget(real string) bool {
	if strings.EqualFold(filepath.Ext(real), ".gguf") {
		return true
	}
	var dirs []string
	if lr, ok := c.Registry.(*LibraryRegistry); ok {
		dirs = append(dirs, lr.Dirs...)
	}
	if home := c.home(); home != "" {
		dirs = append(dirs, filepath.Join(home, "blobs"))
	}
	for _, d := range dirs {
		if rd, err := filepath.EvalSymlinks(d); d != "" && err == nil && inside(rd, real) {
			return true
		}
	}
	return false
}

// inside reports whether p is below the folder dir (both clean and free
// of links).
func inside(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// home is FOLIO_HOME as the server knows it: Home, or Install's.
func (c *Config) home() string {
	if c.Home == "" && c.Install != nil {
		return c.Install.Home
	}
	return c.Home
}

// looksLikeFilePath reports whether a name is written as a path (no model
// name is): absolute, starting with "." or "~", or holding a backslash.
// It never looks at the disk.
func looksLikeFilePath(name string) bool {
	return filepath.IsAbs(name) || strings.HasPrefix(name, "/") || strings.HasPrefix(name, ".") ||
		strings.HasPrefix(name, "~") || strings.ContainsRune(name, '\\')
}

// notFound is the one answer for a name that is no model of this server,
// including a file the request may not open: it names no folder.
func notFound(name string) error { return &notFoundError{name} }

type notFoundError struct{ name string }

func (e *notFoundError) Error() string {
	msg := fmt.Sprintf("model %.200q not found", e.name)
	if looksLikeFilePath(e.name) { // the same words whether or not the file exists
		msg += ": a path names a model only when it leads to a GGUF file of the server's machine"
	}
	return msg
}

func (e *notFoundError) Unwrap() error { return ErrModelNotFound }

// looksLikePath reports whether /api/create's from names a file rather
// than a model: over the API a create starts from a model or from blobs
// uploaded to /api/blobs, never from a file of the server's machine.
func looksLikePath(from string) bool {
	if from == "" {
		return false
	}
	if looksLikeFilePath(from) {
		return true
	}
	st, err := os.Stat(from)
	return err == nil && !st.IsDir()
}
