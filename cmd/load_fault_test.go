package cmd

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"folio/installer"
	"folio/installer/fakehub"
	"folio/internal/fixtures"
	"folio/models"
	"folio/store"
)

// serveChildEnv makes TestServeFaultChild run `folio serve` at its value
// (host:port); FOLIO_HOME and FOLIO_MODELS_PATH come from the parent.
const serveChildEnv = "FOLIO_FAULT_SERVE"

// TestServeFaultChild is the server TestKillDuringModelLoad kills.
func TestServeFaultChild(t *testing.T) {
	addr := os.Getenv(serveChildEnv)
	if addr == "" {
		t.Skip("the child of TestKillDuringModelLoad")
	}
	os.Setenv("FOLIO_HOST", addr) // TestMain pointed it elsewhere
	root := NewRoot()
	root.SetArgs([]string{"serve"})
	root.SetErr(os.Stderr)
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
}

// startServe starts `folio serve` on home in a child process and waits
// until it answers.
func startServe(t *testing.T, home string) (*exec.Cmd, string, *fixtures.LockedBuffer) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	child := exec.Command(os.Args[0], "-test.run=^TestServeFaultChild$", "-test.count=1", "-test.timeout=2m")
	child.Env = append(os.Environ(), serveChildEnv+"="+addr, "FOLIO_HOME="+home, "FOLIO_MODELS_PATH="+t.TempDir())
	var out fixtures.LockedBuffer
	child.Stdout, child.Stderr = &out, &out
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if resp, err := http.Get("http://" + addr + "/api/version"); err == nil {
			resp.Body.Close()
			return child, addr, &out
		}
		if time.Now().After(deadline) {
			t.Fatalf("folio serve did not answer at %s:\n%s", addr, out.String())
		}
	}
}

// faultGenerate asks for a greedy answer to a 600-byte prompt (whose
// blocks the K/V store keeps between runs).
func faultGenerate(addr, model string) (string, error) {
	body := fmt.Sprintf(`{"model":%q,"prompt":%q,"raw":true,"stream":false,"options":{"temperature":0,"num_predict":8}}`,
		model, strings.Repeat("a quiet river under seven bridges ", 18))
	resp, err := http.Post("http://"+addr+"/api/generate", "application/json", strings.NewReader(body))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var out struct{ Response, Error string }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("status %d: %s", resp.StatusCode, out.Error)
	}
	return out.Response, nil
}

// TestKillDuringModelLoad: folio serve killed (SIGKILL) at growing delays
// after a request that loads a registered model (whose prefix blocks the
// K/V store holds) leaves a home whose registry and K/V store open
// without damage and whose model still matches its digest; the next
// server loads it and answers as before.
func TestKillDuringModelLoad(t *testing.T) {
	hub := fakehub.New()
	defer hub.Close()
	hub.Publish("library", "tiny", "latest", fakehub.Layer{MediaType: installer.MediaModel, Data: tinyModel(t, 3)})
	home := t.TempDir()
	t.Setenv("FOLIO_HOME", home)
	name := hub.Host() + "/library/tiny:latest"
	if out, err := execute(t, "pull", "--insecure", name); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	child, addr, _ := startServe(t, home)
	want, err := faultGenerate(addr, name)
	if err != nil {
		t.Fatal(err)
	}
	child.Process.Signal(syscall.SIGTERM) // persists the prompt's blocks on the way out
	child.Wait()

	duringLoad := 0
	for i := range 10 {
		child, addr, out := startServe(t, home)
		go faultGenerate(addr, name)
		time.Sleep(time.Duration(i) * 3 * time.Millisecond)
		child.Process.Kill()
		child.Wait()
		if !strings.Contains(out.String(), "model loaded") {
			duringLoad++
		}
		checkHomeAfterKill(t, home, name)
	}
	_, addr, _ = startServe(t, home)
	if got, err := faultGenerate(addr, name); err != nil || got != want {
		t.Errorf("after the kills: %q, %v; before: %q", got, err, want)
	}
	t.Logf("10 servers killed, %d of them before the model had loaded", duringLoad)
}

// checkHomeAfterKill opens the store as a new server would: no damage
// reported, the model registered and its file matching its digest.
func checkHomeAfterKill(t *testing.T, home, name string) {
	t.Helper()
	var logs fixtures.LockedBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	st, err := store.OpenRegistry(home, store.RegistryOptions{Log: log})
	if err != nil {
		t.Fatalf("the registry does not open after the kill: %v", err)
	}
	defer st.Close()
	kv, err := store.OpenKV(home, store.KVOptions{MaxBytes: 1 << 30, Log: log})
	if err != nil {
		t.Fatalf("the K/V store does not open after the kill: %v", err)
	}
	defer kv.Close()
	if strings.Contains(logs.String(), "damaged") {
		t.Errorf("the kill damaged the store: %s", logs.String())
	}
	m, err := st.Model(name)
	if err != nil {
		t.Fatalf("the model is gone after the kill: %v", err)
	}
	if d, _, err := models.FileDigest(m.Path); err != nil || "sha256:"+d != m.Digest {
		t.Errorf("the model file no longer matches its digest: %s, %v", d, err)
	}
}
