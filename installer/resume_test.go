package installer_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"folio/installer"
	"folio/installer/fakehub"
	"folio/models/gguf"
	"folio/store"
)

// childEnv makes TestPullChild pull: "home|name".
const childEnv = "FOLIO_INSTALLER_PULL_CHILD"

// TestPullChild is the process TestResumeAfterKill kills mid-pull.
func TestPullChild(t *testing.T) {
	spec := os.Getenv(childEnv)
	if spec == "" {
		t.Skip("the child of TestResumeAfterKill")
	}
	home, name, _ := strings.Cut(spec, "|")
	st, err := store.OpenRegistry(home, store.RegistryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	opt := testOptions(home, st)
	opt.MinPartSize = 1 << 20 // 5 ranges of 1.1 MB, 4 at once: each is held after 300 KiB
	_, err = installer.Pull(context.Background(), name, opt)
	t.Fatalf("the pull ended (%v); it should have been killed", err)
}

// TestResumeAfterKill: a pull killed with SIGKILL resumes in the next
// pull, which fetches exactly the bytes the resume record does not hold.
func TestResumeAfterKill(t *testing.T) {
	hub := fakehub.New()
	defer hub.Close()
	const through = 300 << 10 // bytes of each range the hub sends before holding
	hub.Hold = make(chan struct{})
	hub.HoldAfter.Store(through)
	weights := publishTiny(t, hub, gguf.TypeF32) // 5.8 MB
	home := t.TempDir()
	name := hub.Host() + "/library/tiny:latest"

	child := exec.Command(os.Args[0], "-test.run=^TestPullChild$", "-test.timeout=2m")
	child.Env = append(os.Environ(), childEnv+"="+home+"|"+name)
	var out strings.Builder
	child.Stdout, child.Stderr = &out, &out
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	// The record is another process's file: watch it until it holds all
	// the bytes the hub let through (4 ranges × 300 KiB).
	record := filepath.Join(home, "blobs", fakehub.Digest(weights)[7:]+"-partial.json")
	var held int64
	for deadline := time.Now().Add(time.Minute); held != 4*through; {
		if time.Now().After(deadline) {
			child.Process.Kill()
			t.Fatalf("the child's record holds %d bytes, want %d; its output:\n%s", held, 4*through, out.String())
		}
		time.Sleep(5 * time.Millisecond)
		held = recorded(record)
	}
	if err := child.Process.Kill(); err != nil { // SIGKILL: no cleanup runs
		t.Fatal(err)
	}
	child.Wait()
	held = recorded(record)
	// New requests are not held; the child's held ones end with their
	// connections, without sending more.
	hub.HoldAfter.Store(0)

	digest := fakehub.Digest(weights)
	before := hub.ServedOf(digest)
	st, err := store.OpenRegistry(home, store.RegistryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m, err := installer.Pull(context.Background(), name, testOptions(home, st))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := hub.ServedOf(digest)-before, int64(len(weights))-held; got != want {
		t.Errorf("the second pull fetched %d bytes; want %d (%d of %d were on disk)", got, want, held, len(weights))
	}
	if m.Digest != digest {
		t.Errorf("registered %s", m.Digest)
	}
	if _, err := os.Stat(record); !os.IsNotExist(err) {
		t.Errorf("the record is still there: %v", err)
	}
}

// recorded sums the bytes a resume record says are on disk.
func recorded(path string) int64 {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	var st struct {
		Parts []struct {
			Done int64 `json:"done"`
		} `json:"parts"`
	}
	if json.Unmarshal(data, &st) != nil {
		return 0
	}
	var n int64
	for _, p := range st.Parts {
		n += p.Done
	}
	return n
}
