package installer

import (
	"path/filepath"
	"strings"
	"testing"
)

// FuzzNamePath: whatever a client sends as a model name or a digest, a
// name ParseName accepts becomes a manifest path exactly four plain
// components under home/manifests, its String parses back to itself, and
// a digest CheckDigest accepts becomes one file directly in home/blobs.
func FuzzNamePath(f *testing.F) {
	for _, s := range []string{"llama3.2", "library/llama3.2:1b", "registry.ollama.ai/library/x:latest",
		"hf.co/org/repo:Q4_K_M", "127.0.0.1:8080/a/b:c", "../../etc/passwd", "a/../b", "x:..", ".:latest",
		"sha256:" + strings.Repeat("0", 64), "sha256:../" + strings.Repeat("0", 61), "huggingface.co/a/b"} {
		f.Add(s)
	}
	home := filepath.Join(string(filepath.Separator), "home", "u", ".folio")
	manifests := filepath.Join(home, "manifests")
	f.Fuzz(func(t *testing.T, s string) {
		if n, err := ParseName(s); err == nil {
			p := n.manifestPath(home)
			rel, err := filepath.Rel(manifests, p)
			parts := strings.Split(rel, string(filepath.Separator))
			if err != nil || len(parts) != 4 || filepath.Clean(p) != p {
				t.Fatalf("name %q: manifest path %q is not four components under %s", s, p, manifests)
			}
			for _, c := range parts {
				if c == "" || c == "." || c == ".." || strings.ContainsAny(c, `/\`) {
					t.Fatalf("name %q: component %q of %q", s, c, p)
				}
			}
			back, err := ParseName(n.String())
			if err != nil || back != n {
				t.Fatalf("name %q: String %q parses to %+v, %v", s, n.String(), back, err)
			}
		}
		if p, err := BlobPath(home, s); err == nil {
			if filepath.Dir(p) != filepath.Join(home, "blobs") || !strings.HasPrefix(filepath.Base(p), "sha256-") || len(filepath.Base(p)) != 71 {
				t.Fatalf("digest %q: blob path %q", s, p)
			}
		}
	})
}
