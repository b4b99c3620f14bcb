package installer_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"folio/installer"
	"folio/installer/fakehub"
	"folio/models/gguf"
)

// TestPullHuggingFace: hf.co/ORG/REPO[:QUANT] picks the GGUF file of the
// quantization (Q4_K_M by default, any case, as a whole word), checks it
// against the listing's LFS sha256, through either listing.
func TestPullHuggingFace(t *testing.T) {
	hub := fakehub.New()
	defer hub.Close()
	q4, q8, q4s := tinyGGUF(t, gguf.TypeQ8_0, 4), tinyGGUF(t, gguf.TypeQ8_0, 8), tinyGGUF(t, gguf.TypeQ8_0, 5)
	hub.AddRepoFile("org/tiny-GGUF", "tiny-Q4_K_M.gguf", q4, "")
	hub.AddRepoFile("org/tiny-GGUF", "tiny-Q4_K_S.gguf", q4s, "")
	hub.AddRepoFile("org/tiny-GGUF", "sub/tiny-Q8_0.gguf", q8, "")
	hub.AddRepoFile("org/tiny-GGUF", "mmproj-tiny-Q8_0.gguf", []byte("projector"), "")
	hub.AddRepoFile("org/tiny-GGUF", "README.md", []byte("# tiny"), "-")
	home, st := newHome(t)
	hfOptions := func() installer.Options {
		o := testOptions(home, st)
		o.HFEndpoint = hub.URL
		return o
	}
	for _, c := range []struct {
		name   string
		noTree bool
		want   []byte
	}{
		{"hf.co/org/tiny-GGUF", false, q4},
		{"hf.co/org/tiny-GGUF:q8_0", false, q8},
		{"huggingface.co/org/tiny-GGUF:Q4_K_S", true, q4s},
	} {
		t.Run(c.name, func(t *testing.T) {
			hub.NoTree.Store(c.noTree)
			m, err := installer.Pull(context.Background(), c.name, hfOptions())
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if m.Digest != fakehub.Digest(c.want) || !strings.HasPrefix(m.Name, "hf.co/org/tiny-GGUF:") {
				t.Errorf("%s: registered %s as %s", c.name, m.Digest, m.Name)
			}
		})
	}
	if text := generate(t, st, "hf.co/org/tiny-GGUF:latest"); text == "" {
		t.Error("the pulled model generated nothing")
	}
	hub.NoTree.Store(false)

	_, err := installer.Pull(context.Background(), "hf.co/org/tiny-GGUF:IQ2_XS", hfOptions())
	if !errors.Is(err, installer.ErrNotFound) || !strings.Contains(err.Error(), "tiny-Q4_K_M.gguf") {
		t.Errorf("a missing quantization: %v", err)
	}
	_, err = installer.Pull(context.Background(), "hf.co/org/nosuch", hfOptions())
	if !errors.Is(err, installer.ErrNotFound) {
		t.Errorf("a missing repository: %v", err)
	}

	// The listing's sha256 is what the bytes are checked against.
	hub.AddRepoFile("org/liar", "liar-Q4_K_M.gguf", q4, strings.Repeat("0", 64))
	_, err = installer.Pull(context.Background(), "hf.co/org/liar", hfOptions())
	if !errors.Is(err, installer.ErrDigest) {
		t.Errorf("a file that does not match its LFS sha256: %v", err)
	}
	// A file without LFS metadata: its sha256 is computed, and said so.
	hub.AddRepoFile("org/plain", "plain.gguf", q8, "-")
	var rec recorder
	opt := hfOptions()
	opt.Progress = rec.add
	m, err := installer.Pull(context.Background(), "hf.co/org/plain", opt)
	if err != nil || m.Digest != fakehub.Digest(q8) || !strings.Contains(strings.Join(rec.statuses(), "\n"), "computed sha256") {
		t.Errorf("a git file: %+v, %v, %q", m, err, rec.statuses())
	}
	// A listing that names a file outside the repository is refused.
	hub.AddRepoFile("org/evil", "../../x-Q4_K_M.gguf", q4, "")
	if _, err := installer.Pull(context.Background(), "hf.co/org/evil", hfOptions()); !errors.Is(err, installer.ErrName) {
		t.Errorf("a file named ../../x: %v", err)
	}
}

// TestPullURL: a plain URL is fetched (in ranges when the server allows),
// its sha256 computed and reported as such, and registered under the
// file's name or --name.
func TestPullURL(t *testing.T) {
	hub := fakehub.New()
	defer hub.Close()
	weights := tinyGGUF(t, gguf.TypeF32, 3)
	hub.AddFile("Tiny-F32.gguf", weights)
	home, st := newHome(t)
	var rec recorder
	opt := testOptions(home, st)
	opt.Progress = rec.add
	m, err := installer.Pull(context.Background(), hub.URL+"/files/Tiny-F32.gguf", opt)
	if err != nil {
		t.Fatal(err)
	}
	if m.Name != "Tiny-F32:latest" || m.Digest != fakehub.Digest(weights) || m.Size != int64(len(weights)) {
		t.Errorf("registered %+v", m)
	}
	if s := strings.Join(rec.statuses(), "\n"); !strings.Contains(s, "computed sha256 digest "+m.Digest) {
		t.Errorf("statuses %q do not say the digest was computed", s)
	}
	hub.NoRanges.Store(true) // one stream
	opt.Name = "other:v1"
	hub.AddFile("b.gguf", tinyGGUF(t, gguf.TypeQ8_0, 3))
	m, err = installer.Pull(context.Background(), hub.URL+"/files/b.gguf", opt)
	if err != nil || m.Name != "other:v1" {
		t.Errorf("--name: %+v, %v", m, err)
	}
	// One stream that is always cut starts over a few times, then gives up.
	hub.DropEvery.Store(1 << 20)
	hub.AddFile("c.gguf", tinyGGUF(t, gguf.TypeQ8_0, 6))
	opt.Retries = 3
	if _, err := installer.Pull(context.Background(), hub.URL+"/files/c.gguf", opt); err == nil || !strings.Contains(err.Error(), "4 tries") {
		t.Errorf("a stream always cut: %v", err)
	}
	if _, err := installer.Pull(context.Background(), hub.URL+"/files/nosuch.gguf", opt); !errors.Is(err, installer.ErrNotFound) {
		t.Errorf("a missing file: %v", err)
	}
}

// TestHFTokenIsAnOption: Options.HFToken (HF_TOKEN, read by cmd) is sent
// to the Hugging Face endpoint; without it no Authorization goes out.
func TestHFTokenIsAnOption(t *testing.T) {
	var auth []string
	var mu sync.Mutex
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		http.NotFound(w, r)
	}))
	defer hub.Close()
	home, st := newHome(t)
	for _, tok := range []string{"hf_secret", ""} {
		auth = nil
		opt := testOptions(home, st)
		opt.HFEndpoint, opt.HFToken = hub.URL, tok
		if _, err := installer.Pull(context.Background(), "hf.co/org/gated", opt); err == nil {
			t.Fatal("a repository the hub does not have was pulled")
		}
		mu.Lock()
		if len(auth) == 0 || auth[0] != map[string]string{"hf_secret": "Bearer hf_secret", "": ""}[tok] {
			t.Errorf("token %q: Authorization headers %q", tok, auth)
		}
		mu.Unlock()
	}
}
