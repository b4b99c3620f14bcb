package installer_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"folio/installer"
	"folio/installer/fakehub"
	"folio/internal/fixtures"
	"folio/models"
	"folio/models/gguf"
	"folio/store"
)

// checkHome is what must hold in a home directory after any fault: the
// registry opens; every registered model's file exists and hashes to its
// digest; every finished blob (blobs/sha256-<hex>) hashes to its name.
// Partial downloads may be there: they are not registered and resume.
func checkHome(t *testing.T, home string) []store.Model {
	t.Helper()
	st, err := store.OpenRegistry(home, store.RegistryOptions{})
	if err != nil {
		t.Fatalf("the registry does not open after the fault: %v", err)
	}
	defer st.Close()
	ms, err := st.Models()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if d, _, err := models.FileDigest(m.Path); err != nil || "sha256:"+d != m.Digest {
			t.Errorf("model %s is registered with %s but its file %s hashes to %s (%v)", m.Name, m.Digest, m.Path, d, err)
		}
	}
	for _, f := range blobFiles(t, home) {
		if strings.Contains(f, "partial") {
			continue
		}
		d, _, err := models.FileDigest(filepath.Join(home, "blobs", f))
		if err != nil || "sha256-"+d != f {
			t.Errorf("blob %s hashes to %s (%v)", f, d, err)
		}
	}
	return ms
}

// fullDisk is a partial file on a disk with left bytes of room: writes
// past it fail with ENOSPC, as the system's do.
type fullDisk struct {
	f    *os.File
	left *atomic.Int64
}

func (d fullDisk) WriteAt(p []byte, off int64) (int, error) {
	if d.left.Add(-int64(len(p))) < 0 {
		return 0, &os.PathError{Op: "write", Path: d.f.Name(), Err: syscall.ENOSPC}
	}
	return d.f.WriteAt(p, off)
}

// checkDiskFull: the error says the disk is full and what to do, and
// nothing is registered.
func checkDiskFull(t *testing.T, home string, err error) {
	t.Helper()
	if !errors.Is(err, installer.ErrDiskFull) || !strings.Contains(err.Error(), "free disk space") ||
		!strings.Contains(err.Error(), "resumes") {
		t.Fatalf("a pull onto a full disk: %v; want ErrDiskFull saying what to free", err)
	}
	if ms := checkHome(t, home); len(ms) != 0 {
		t.Errorf("registered after a full disk: %+v", ms)
	}
	t.Logf("the user sees: %v", err)
}

// TestPullDiskFullSeam: a disk that fills up after 1 MB of the blob ends
// the pull with an error that says so; nothing is registered; once there
// is room the next pull resumes and the model runs.
func TestPullDiskFullSeam(t *testing.T) {
	hub := fakehub.New()
	defer hub.Close()
	weights := publishTiny(t, hub, gguf.TypeF32) // 5.8 MB
	home, st := newHome(t)
	name := hub.Host() + "/library/tiny:latest"
	var left atomic.Int64
	left.Store(1 << 20)
	restore := installer.SetPartialWriter(func(f *os.File) io.WriterAt { return fullDisk{f, &left} })
	_, err := installer.Pull(context.Background(), name, testOptions(home, st))
	restore()
	checkDiskFull(t, home, err)

	before := hub.ServedOf(fakehub.Digest(weights))
	if _, err := installer.Pull(context.Background(), name, testOptions(home, st)); err != nil {
		t.Fatal(err)
	}
	if again := hub.ServedOf(fakehub.Digest(weights)) - before; again >= int64(len(weights)) {
		t.Errorf("the second pull fetched %d of %d bytes: it did not resume", again, len(weights))
	}
	if ms := checkHome(t, home); len(ms) != 1 {
		t.Fatalf("registered after the second pull: %+v", ms)
	}
	if generate(t, st, name) == "" {
		t.Error("the model generated nothing")
	}
}

// TestPullDiskFullTmpfs: the same on a real 2 MiB tmpfs (needs the right
// to mount; skipped without it), then the disk grows and the pull
// resumes.
func TestPullDiskFullTmpfs(t *testing.T) {
	home, resize := fixtures.SmallDisk(t, "2m")
	hub := fakehub.New()
	defer hub.Close()
	publishTiny(t, hub, gguf.TypeF32)
	st, err := store.OpenRegistry(home, store.RegistryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	name := hub.Host() + "/library/tiny:latest"
	_, err = installer.Pull(context.Background(), name, testOptions(home, st))
	checkDiskFull(t, home, err)
	resize("16m")
	if _, err := installer.Pull(context.Background(), name, testOptions(home, st)); err != nil {
		t.Fatal(err)
	}
	if ms := checkHome(t, home); len(ms) != 1 {
		t.Fatalf("registered after the second pull: %+v", ms)
	}
	if generate(t, st, name) == "" {
		t.Error("the model generated nothing")
	}
}

// faultChildEnv makes TestPullFaultChild pull: "home|name".
const faultChildEnv = "FOLIO_INSTALLER_FAULT_CHILD"

// TestPullFaultChild pulls and says "pulled"; TestPullKilledAnywhere kills it.
func TestPullFaultChild(t *testing.T) {
	spec := os.Getenv(faultChildEnv)
	if spec == "" {
		t.Skip("the child of TestPullKilledAnywhere")
	}
	home, name, _ := strings.Cut(spec, "|")
	st, err := store.OpenRegistry(home, store.RegistryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	opt := testOptions(home, st)
	opt.MinPartSize = 512 << 10
	if _, err := installer.Pull(context.Background(), name, opt); err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("pulled\n")
}

// TestPullKilledAnywhere: pulls killed (SIGKILL) at growing delays, from
// before the manifest to after the registration, each resuming the one
// before, never leave the home inconsistent (checkHome); the pull that
// is let finish registers a model that runs.
func TestPullKilledAnywhere(t *testing.T) {
	hub := fakehub.New()
	defer hub.Close()
	hub.DropEvery.Store(192 << 10) // slower: every range is fetched in pieces
	publishTiny(t, hub, gguf.TypeF32)
	home := t.TempDir()
	name := hub.Host() + "/library/tiny:latest"
	kills, partial, finished := 0, 0, false
	for delay := time.Duration(0); !finished && delay < 2*time.Second; delay += 4 * time.Millisecond {
		child := exec.Command(os.Args[0], "-test.run=^TestPullFaultChild$", "-test.count=1", "-test.timeout=1m")
		child.Env = append(os.Environ(), faultChildEnv+"="+home+"|"+name)
		child.Stderr = os.Stderr
		out, err := child.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := child.Start(); err != nil {
			t.Fatal(err)
		}
		said := make(chan bool, 1)
		go func() {
			sc := bufio.NewScanner(out)
			pulled := false
			for sc.Scan() {
				pulled = pulled || sc.Text() == "pulled"
			}
			said <- pulled
		}()
		time.Sleep(delay)
		child.Process.Kill()
		finished = <-said
		child.Wait()
		if !finished {
			kills++
		}
		checkHome(t, home)
		if slices.ContainsFunc(blobFiles(t, home), func(f string) bool { return strings.HasSuffix(f, "-partial") }) {
			partial++
		}
	}
	if kills == 0 || !finished {
		t.Fatalf("%d pulls killed; one finished: %v", kills, finished)
	}
	st, err := store.OpenRegistry(home, store.RegistryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if ms := checkHome(t, home); len(ms) != 1 || ms[0].Name != name {
		t.Fatalf("registered: %+v", ms)
	}
	if generate(t, st, name) == "" {
		t.Error("the model generated nothing")
	}
	t.Logf("%d pulls killed before one finished; %d kills left a partial download", kills, partial)
}
