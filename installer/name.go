package installer

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
)

// Defaults of a model name, as Ollama's.
const (
	DefaultHost      = "registry.ollama.ai"
	DefaultNamespace = "library"
	DefaultTag       = "latest"
	hfHost           = "hf.co" // Hugging Face names: hf.co/ORG/REPO[:QUANT]
)

var (
	// ErrName is wrapped when a model name or digest cannot be used.
	ErrName = errors.New("installer: bad name")

	hostRE   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.-]{0,252}(:[0-9]{1,5})?$`)
	partRE   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$`)
	tagRE    = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,79}$`)
	digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
)

// Name is a model name, [host/][namespace/]model[:tag], with its defaults
// filled in. Every part has been checked: none is empty, ".", "..", or
// holds a path separator, so the parts may be joined into a path.
type Name struct {
	Host      string // "registry.ollama.ai", "127.0.0.1:8080", "hf.co"
	Namespace string // "library", a user, or a Hugging Face organisation
	Model     string
	Tag       string
}

// ParseName checks s and fills in the defaults: "llama3.2" is
// registry.ollama.ai/library/llama3.2:latest. huggingface.co/ names are
// hf.co/ names.
func ParseName(s string) (Name, error) {
	bad := func(why string) (Name, error) {
		return Name{}, fmt.Errorf("%w: %.200q: %s (a name is [host/][namespace/]model[:tag] of letters, digits, '-', '_' and '.')", ErrName, s, why)
	}
	if s == "" {
		return bad("empty")
	}
	if len(s) > 350 {
		return bad("too long")
	}
	if strings.Contains(s, "..") || strings.ContainsAny(s, "\\ \t\r\n") || strings.HasPrefix(s, "/") {
		return bad(`".." , a backslash, a space or a leading "/" is not allowed`)
	}
	n := Name{Host: DefaultHost, Namespace: DefaultNamespace, Tag: DefaultTag}
	rest := s
	if i := strings.LastIndexByte(s, ':'); i > strings.LastIndexByte(s, '/') {
		rest, n.Tag = s[:i], s[i+1:]
	}
	parts := strings.Split(rest, "/")
	switch len(parts) {
	case 1:
		n.Model = parts[0]
	case 2:
		n.Namespace, n.Model = parts[0], parts[1]
	case 3:
		n.Host, n.Namespace, n.Model = parts[0], parts[1], parts[2]
	default:
		return bad("too many '/'")
	}
	if strings.EqualFold(n.Host, "huggingface.co") {
		n.Host = hfHost
	}
	switch {
	case !hostRE.MatchString(n.Host):
		return bad("host " + quote(n.Host))
	case !partRE.MatchString(n.Namespace):
		return bad("namespace " + quote(n.Namespace))
	case !partRE.MatchString(n.Model):
		return bad("model " + quote(n.Model))
	case !tagRE.MatchString(n.Tag):
		return bad("tag " + quote(n.Tag))
	}
	return n, nil
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

// String is the name as Ollama shows it: without the default host, and
// without the default namespace on the default host.
func (n Name) String() string {
	switch {
	case n.Host == DefaultHost && n.Namespace == DefaultNamespace:
		return n.Model + ":" + n.Tag
	case n.Host == DefaultHost:
		return n.Namespace + "/" + n.Model + ":" + n.Tag
	}
	return n.Host + "/" + n.Namespace + "/" + n.Model + ":" + n.Tag
}

// HuggingFace reports whether n names a Hugging Face repository.
func (n Name) HuggingFace() bool { return n.Host == hfHost }

// manifestPath is where n's manifest is kept under home, as Ollama keeps
// it: manifests/<host>/<namespace>/<model>/<tag>.
func (n Name) manifestPath(home string) string {
	return filepath.Join(home, "manifests", n.Host, n.Namespace, n.Model, n.Tag)
}

// CanonicalName is the name the registry (folio.db) knows a model by:
// ParseName's String, or s itself when it is not a model name.
func CanonicalName(s string) string {
	if n, err := ParseName(s); err == nil {
		return n.String()
	}
	return s
}

// CheckDigest refuses anything but "sha256:" and 64 lower-case hex digits:
// digests become file names.
func CheckDigest(d string) error {
	if !digestRE.MatchString(d) {
		return fmt.Errorf("%w: digest %.80q: want sha256: and 64 lower-case hex digits", ErrName, d)
	}
	return nil
}

// BlobPath is the file of a blob under home: blobs/sha256-<hex>.
func BlobPath(home, digest string) (string, error) {
	if err := CheckDigest(digest); err != nil {
		return "", err
	}
	return filepath.Join(home, "blobs", "sha256-"+digest[len("sha256:"):]), nil
}
