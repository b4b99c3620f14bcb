package installer_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"folio/installer"
	"folio/installer/fakehub"
	"folio/models/gguf"
	"folio/store"
)

// TestPullRegistry: a model pulled from a registry is verified, in
// blobs/ (0600, no partials left), registered with the GGUF header's facts
// and its layers, reported in Ollama's order, and runs.
func TestPullRegistry(t *testing.T) {
	hub := fakehub.New()
	defer hub.Close()
	weights := publishTiny(t, hub, gguf.TypeQ8_0)
	home, st := newHome(t)
	var rec recorder
	opt := testOptions(home, st)
	opt.Progress = rec.add
	name := hub.Host() + "/library/tiny:latest"
	m, err := installer.Pull(context.Background(), name, opt)
	if err != nil {
		t.Fatal(err)
	}
	digest := fakehub.Digest(weights)
	wantPath, _ := installer.BlobPath(home, digest)
	if m.Name != name || m.Digest != digest || m.Path != wantPath || m.Size != int64(len(weights)) ||
		m.Family != "llama" || m.Quantization != "Q8_0" || m.ParameterSize != "1M" || m.Template != "{{ .Prompt }}" ||
		m.Parameters != `{"stop":["<end>"],"temperature":0.5}` {
		t.Errorf("registered %+v", m)
	}
	st2, err := os.Stat(wantPath)
	if err != nil || st2.Mode().Perm() != 0o600 {
		t.Errorf("blob %v, mode %v", err, st2.Mode())
	}
	for _, f := range blobFiles(t, home) {
		if strings.Contains(f, "partial") {
			t.Errorf("left behind: %s", f)
		}
	}
	if n := len(blobFiles(t, home)); n != 6 { // config, model, template, system, params, license
		t.Errorf("%d blobs: %v", n, blobFiles(t, home))
	}
	cfg, err := installer.ReadConfig(home, name)
	if err != nil || cfg.System != "You are tiny." || len(cfg.License) != 1 || cfg.Parameters["temperature"] != 0.5 {
		t.Errorf("config %+v, %v", cfg, err)
	}
	got := rec.statuses()
	want := []string{"pulling manifest", "pulling " + digest[7:19], "verifying sha256 digest", "writing manifest",
		"removing unused layers", "success"}
	for i, w := range want[1:] {
		if a, b := slices.Index(got, want[i]), slices.Index(got, w); a < 0 || b < 0 || a > b {
			t.Errorf("statuses %q: want %q before %q", got, want[i], w)
		}
	}
	if text := generate(t, st, name); text == "" {
		t.Error("the pulled model generated nothing")
	}

	// A second pull fetches nothing.
	served := hub.Served.Load()
	if _, err := installer.Pull(context.Background(), name, opt); err != nil {
		t.Fatal(err)
	}
	if d := hub.Served.Load() - served; d != 0 {
		t.Errorf("second pull fetched %d bytes", d)
	}
}

// TestPullDroppedConnections: a server that drops the connection every
// 300 KB still delivers the whole model, and every byte is fetched once.
func TestPullDroppedConnections(t *testing.T) {
	hub := fakehub.New()
	defer hub.Close()
	hub.DropEvery.Store(300_000)
	weights := publishTiny(t, hub, gguf.TypeF32)
	home, st := newHome(t)
	if _, err := installer.Pull(context.Background(), hub.Host()+"/library/tiny", testOptions(home, st)); err != nil {
		t.Fatal(err)
	}
	if n := hub.Requests.Load(); n < int64(len(weights)/300_000) {
		t.Errorf("%d requests for %d bytes: the server did not drop connections", n, len(weights))
	}
	total := hub.Bytes("library", "tiny", "latest")
	if got := hub.Served.Load(); got != total {
		t.Errorf("served %d bytes for %d: ranges fetched again", got, total)
	}
}

// TestPullNoRanges: a server that ignores Range still works (one stream).
func TestPullNoRanges(t *testing.T) {
	hub := fakehub.New()
	defer hub.Close()
	hub.NoRanges.Store(true)
	publishTiny(t, hub, gguf.TypeF32)
	home, st := newHome(t)
	if _, err := installer.Pull(context.Background(), hub.Host()+"/library/tiny", testOptions(home, st)); err != nil {
		t.Fatal(err)
	}
}

// TestPullBadDigest: bytes that do not hash to their digest are discarded
// and nothing is registered.
func TestPullBadDigest(t *testing.T) {
	hub := fakehub.New()
	defer hub.Close()
	weights := publishTiny(t, hub, gguf.TypeQ8_0)
	bad := slices.Clone(weights)
	bad[len(bad)/2] ^= 1
	hub.SetBlob(fakehub.Digest(weights), bad)
	home, st := newHome(t)
	_, err := installer.Pull(context.Background(), hub.Host()+"/library/tiny", testOptions(home, st))
	if !errors.Is(err, installer.ErrDigest) {
		t.Fatalf("error %v, want ErrDigest", err)
	}
	if ms, _ := st.Models(); len(ms) != 0 {
		t.Errorf("registered %+v", ms)
	}
	p, _ := installer.BlobPath(home, fakehub.Digest(weights))
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Errorf("the bad blob is in blobs/: %v", err)
	}
	for _, f := range blobFiles(t, home) {
		if strings.HasPrefix(f, fakehub.Digest(weights)[7:]) {
			t.Errorf("left behind: %s", f)
		}
	}
}

// TestPullRefusesTraversal: names and manifest digests that could name a
// file outside home are refused before anything is written (a manifest's,
// as any invalid manifest, as the registry's failure).
func TestPullRefusesTraversal(t *testing.T) {
	hub := fakehub.New()
	defer hub.Close()
	weights := tinyGGUF(t, gguf.TypeQ8_0, 1)
	hub.SetBlob(fakehub.Digest(weights), weights)
	good := `{"mediaType":"application/vnd.ollama.image.model","digest":"` + fakehub.Digest(weights) + `","size":10}`
	for i, layer := range []string{
		`{"mediaType":"application/vnd.ollama.image.model","digest":"../../etc/passwd","size":10}`,
		`{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:../../../../etc/passwd","size":10}`,
		`{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:` + strings.Repeat("A", 64) + `","size":10}`,
		`{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:` + strings.Repeat("a", 63) + `/","size":10}`,
		good + `,{"mediaType":"application/vnd.ollama.image.template","digest":"sha256:/etc/passwd","size":1}`,
		strings.Replace(good, `"size":10`, `"size":-1`, 1),
		strings.Replace(good, `"size":10`, `"size":10,"folio_path":"/etc/passwd"`, 1),
	} {
		tag := "t" + string(rune('0'+i))
		hub.SetManifest("library", "evil", tag, []byte(`{"schemaVersion":2,"layers":[`+layer+`]}`))
		home, st := newHome(t)
		_, err := installer.Pull(context.Background(), hub.Host()+"/library/evil:"+tag, testOptions(home, st))
		if !errors.Is(err, installer.ErrRegistry) {
			t.Errorf("layer %s: error %v, want ErrRegistry", layer, err)
		}
		if fs := blobFiles(t, home); len(fs) != 0 {
			t.Errorf("layer %s: wrote %v", layer, fs)
		}
	}
	home, st := newHome(t)
	for _, name := range []string{"../../etc/passwd", "library/../../x", "/etc/passwd", "a/b/c/d", "x:../../y",
		hub.Host() + "/../evil", "a\\b", "..", ".:latest", "library/.hidden", "m:", hub.Host() + "/library/m:-"} {
		_, err := installer.Pull(context.Background(), name, testOptions(home, st))
		if !errors.Is(err, installer.ErrName) {
			t.Errorf("name %q: error %v, want ErrName", name, err)
		}
	}
	_, err := installer.Pull(context.Background(), hub.Host()+"/library/nosuch", testOptions(home, st))
	if !errors.Is(err, installer.ErrNotFound) {
		t.Errorf("missing model: %v", err)
	}
	if ms, _ := st.Models(); len(ms) != 0 {
		t.Errorf("registered %+v", ms)
	}
}

// TestConcurrentPullsShare: two pulls of one model at once download each
// blob once.
func TestConcurrentPullsShare(t *testing.T) {
	hub := fakehub.New()
	defer hub.Close()
	hub.Hold = make(chan struct{})
	hub.HoldAfter.Store(64 << 10)
	weights := publishTiny(t, hub, gguf.TypeF32)
	home, st := newHome(t)
	name := hub.Host() + "/library/tiny"
	modelStatus := "pulling " + fakehub.Digest(weights)[7:19]
	// The first pull signals once bytes of the weights are in; the second
	// once it reports the weights, which it does after joining the download.
	signal := []chan struct{}{make(chan struct{}), make(chan struct{})}
	errs := make(chan error, 2)
	for i := range 2 {
		opt := testOptions(home, st)
		var once bool
		opt.Progress = func(p installer.Progress) {
			if p.Status == modelStatus && (i == 1 || p.Completed > 0) && !once {
				once = true
				close(signal[i])
			}
		}
		go func() { _, err := installer.Pull(context.Background(), name, opt); errs <- err }()
		<-signal[i]
	}
	close(hub.Hold)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	total := hub.Bytes("library", "tiny", "latest")
	if got := hub.Served.Load(); got != total {
		t.Errorf("served %d bytes for %d: the pulls did not share", got, total)
	}
}

// TestPrune: blobs of a removed model go at the next pull; those of the
// remaining ones and partial downloads stay.
func TestPrune(t *testing.T) {
	hub := fakehub.New()
	defer hub.Close()
	a, b := tinyGGUF(t, gguf.TypeQ8_0, 1), tinyGGUF(t, gguf.TypeQ8_0, 2)
	hub.Publish("library", "a", "latest", fakehub.Layer{MediaType: installer.MediaModel, Data: a},
		fakehub.Layer{MediaType: installer.MediaSystem, Data: []byte("shared")})
	hub.Publish("library", "b", "latest", fakehub.Layer{MediaType: installer.MediaModel, Data: b},
		fakehub.Layer{MediaType: installer.MediaSystem, Data: []byte("shared")})
	home, st := newHome(t)
	opt := testOptions(home, st)
	for _, n := range []string{"a", "b"} {
		if _, err := installer.Pull(context.Background(), hub.Host()+"/library/"+n, opt); err != nil {
			t.Fatal(err)
		}
	}
	partial := filepath.Join(home, "blobs", strings.Repeat("c", 64)+"-partial")
	os.WriteFile(partial, []byte("x"), 0o644)
	if err := st.DeleteModel(hub.Host() + "/library/a:latest"); err != nil {
		t.Fatal(err)
	}
	o := opt
	o.Store = st
	n, err := o.Prune()
	if err != nil || n != 1 { // a's weights; config and system are b's too
		t.Errorf("pruned %d, %v; left %v", n, err, blobFiles(t, home))
	}
	pa, _ := installer.BlobPath(home, fakehub.Digest(a))
	pb, _ := installer.BlobPath(home, fakehub.Digest(b))
	if _, err := os.Stat(pa); !os.IsNotExist(err) {
		t.Error("a's weights are still there")
	}
	if _, err := os.Stat(pb); err != nil {
		t.Error("b's weights are gone")
	}
	if _, err := os.Stat(partial); err != nil {
		t.Error("a partial download was pruned")
	}
	if _, err := st.Blob(fakehub.Digest(a)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a's blob is still registered: %v", err)
	}
}
