package store

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// clock is an injected Options.Now that moves only when told.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Unix(1_700_000_000, 0)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// openTest opens a K/V store in home (a fresh temp directory when "")
// and closes it at the end of the test.
func openTest(t testing.TB, home string, opt KVOptions) *KVStore {
	t.Helper()
	if home == "" {
		home = t.TempDir()
	}
	s, err := OpenKV(home, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// openRegistryTest opens a registry in home (a fresh temp directory when
// "") and closes it at the end of the test.
func openRegistryTest(t testing.TB, home string, opt RegistryOptions) *Registry {
	t.Helper()
	if home == "" {
		home = t.TempDir()
	}
	s, err := OpenRegistry(home, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestRegistryCRUD(t *testing.T) {
	clk := newClock()
	s := openRegistryTest(t, "", RegistryOptions{Now: clk.Now})

	llama := Model{Name: "llama3:8b", Digest: "sha256:aa", Path: "/m/aa", Size: 4 << 30, Format: "gguf",
		Family: "llama", ParameterSize: "8B", Quantization: "Q4_K_M", Template: "{{ .Prompt }}", Parameters: "stop <|eot_id|>"}
	if err := s.PutModel(llama); err != nil {
		t.Fatal(err)
	}
	if err := s.PutModel(Model{Name: "gemma:2b", Digest: "sha256:bb"}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Model("llama3:8b")
	if err != nil {
		t.Fatal(err)
	}
	want := llama
	want.Created, want.Modified = clk.Now(), clk.Now()
	if !sameModel(got, want) {
		t.Fatalf("Model = %+v, want %+v", got, want)
	}

	// Replace: fields change, Created stays, Modified moves.
	clk.Add(time.Hour)
	llama.Quantization = "Q8_0"
	if err := s.PutModel(llama); err != nil {
		t.Fatal(err)
	}
	got, _ = s.Model("llama3:8b")
	if got.Quantization != "Q8_0" || !got.Created.Equal(want.Created) || !got.Modified.Equal(clk.Now()) {
		t.Fatalf("after replace: %+v", got)
	}

	clk.Add(time.Hour)
	if err := s.CopyModel("llama3:8b", "mine"); err != nil {
		t.Fatal(err)
	}
	cp, _ := s.Model("mine")
	if cp.Digest != "sha256:aa" || cp.Quantization != "Q8_0" || !cp.Created.Equal(clk.Now()) {
		t.Fatalf("copy: %+v", cp)
	}
	if err := s.CopyModel("nope", "x"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("CopyModel of a missing model: %v, want ErrNotFound", err)
	}

	ms, err := s.Models()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range ms {
		names = append(names, m.Name)
	}
	if want := []string{"gemma:2b", "llama3:8b", "mine"}; !slices.Equal(names, want) {
		t.Fatalf("Models = %v, want %v", names, want)
	}

	if err := s.DeleteModel("gemma:2b"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Model("gemma:2b"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Model after delete: %v, want ErrNotFound", err)
	}
	if err := s.DeleteModel("gemma:2b"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second DeleteModel: %v, want ErrNotFound", err)
	}
	if err := s.PutModel(Model{}); err == nil {
		t.Fatal("PutModel without a name succeeded")
	}
}

func sameModel(a, b Model) bool {
	ac, am, bc, bm := a.Created, a.Modified, b.Created, b.Modified
	a.Created, a.Modified, b.Created, b.Modified = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	return a == b && ac.Equal(bc) && am.Equal(bm)
}

func TestBlobs(t *testing.T) {
	clk := newClock()
	s := openRegistryTest(t, "", RegistryOptions{Now: clk.Now})
	for _, b := range []Blob{{Digest: "sha256:02", Path: "/b/02", Size: 2}, {Digest: "sha256:01", Path: "/b/01", Size: 1}} {
		if err := s.PutBlob(b); err != nil {
			t.Fatal(err)
		}
	}
	b, err := s.Blob("sha256:01")
	if err != nil || b.Path != "/b/01" || b.Size != 1 || !b.Created.Equal(clk.Now()) {
		t.Fatalf("Blob = %+v, %v", b, err)
	}
	bs, err := s.Blobs()
	if err != nil || len(bs) != 2 || bs[0].Digest != "sha256:01" || bs[1].Digest != "sha256:02" {
		t.Fatalf("Blobs = %+v, %v", bs, err)
	}
	if err := s.DeleteBlob("sha256:01"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Blob("sha256:01"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Blob after delete: %v", err)
	}
	if err := s.DeleteBlob("sha256:01"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second DeleteBlob: %v", err)
	}
}

// TestRegistryReopen: the registry survives Close and OpenRegistry, and
// opening it does not create kvcache.db.
func TestRegistryReopen(t *testing.T) {
	home := t.TempDir()
	s, err := OpenRegistry(home, RegistryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutModel(Model{Name: "a", Size: 7}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openRegistryTest(t, home, RegistryOptions{})
	if m, err := s.Model("a"); err != nil || m.Size != 7 {
		t.Fatalf("after reopen: %+v, %v", m, err)
	}
	if fileExists(home + "/" + kvFile) {
		t.Fatal("kvcache.db created with K/V persistence off")
	}
}
