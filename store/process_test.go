package store

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// Tests with a second process re-execute the test binary: the child runs
// TestChildProcess, which does the part named by $FOLIO_STORE_CHILD in
// $FOLIO_STORE_HOME and reports on stdout.

const (
	childEnv     = "FOLIO_STORE_CHILD"
	childHomeEnv = "FOLIO_STORE_HOME"
	killBlocks   = 4000     // blocks the saver child saves at most
	killSize     = 64 << 10 // bytes per block
)

func startChild(t *testing.T, role, home string) (*exec.Cmd, io.WriteCloser, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+role, childHomeEnv+"="+home)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, stdin, bufio.NewScanner(stdout)
}

// TestChildProcess is the child's side; it is skipped in a normal run.
func TestChildProcess(t *testing.T) {
	role, home := os.Getenv(childEnv), os.Getenv(childHomeEnv)
	if role == "" {
		t.Skip("runs only as the child of a multi-process test")
	}
	s, err := OpenKV(home, KVOptions{MaxBytes: 1 << 40})
	if err != nil {
		fmt.Printf("error %v\n", err)
		os.Exit(1)
	}
	reg, err := OpenRegistry(home, RegistryOptions{})
	if err != nil {
		fmt.Printf("error %v\n", err)
		os.Exit(1)
	}
	switch role {
	case "saver":
		// Saves blocks for ever; says which are written after each Flush.
		for i := range killBlocks {
			save(s, testFP, makeBlock(i, killSize))
			if i%16 == 15 {
				s.Flush()
				fmt.Printf("flushed %d\n", i)
			}
		}
		fmt.Println("done")
	case "lister":
		fmt.Println("ready")
		stop := make(chan struct{})
		go func() { io.Copy(io.Discard, os.Stdin); close(stop) }()
		lists, fails := 0, 0
		var first error
		for running := true; running; {
			select {
			case <-stop:
				running = false
			default:
			}
			if _, err := reg.Models(); err != nil {
				fails++
				first = cmpOr(first, err)
			}
			lists++
		}
		fmt.Printf("lists %d errors %d first %v\n", lists, fails, first)
	}
	s.Close()
	reg.Close()
	os.Exit(0)
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// TestKillDuringWriteBehind: a process killed (SIGKILL) while it writes
// blocks leaves a store that opens; every block that was flushed before
// the kill is there, and every block HasBlocks reports loads with a
// valid checksum or is ErrCorrupt; nothing panics.
func TestKillDuringWriteBehind(t *testing.T) {
	if testing.Short() {
		t.Skip("writes ~20 MB in a child process")
	}
	home := t.TempDir()
	cmd, _, out := startChild(t, "saver", home)
	flushed, lines := -1, 0
	for out.Scan() && lines < 20 {
		f := strings.Fields(out.Text())
		if len(f) != 2 || f[0] != "flushed" {
			t.Fatalf("child said %q", out.Text())
		}
		flushed, _ = strconv.Atoi(f[1])
		lines++
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if flushed < 0 {
		t.Fatal("the child flushed nothing")
	}

	s := openTest(t, home, KVOptions{MaxBytes: 1 << 40})
	present, corrupt := 0, 0
	for i := range killBlocks {
		b := makeBlock(i, killSize)
		if s.HasBlocks(testFP, hashes(b)) == 0 {
			if i <= flushed {
				t.Fatalf("block %d was flushed before the kill and is missing", i)
			}
			continue
		}
		present++
		switch err := load(s, testFP, b); {
		case err == nil:
		case errors.Is(err, ErrCorrupt):
			corrupt++
		default:
			t.Fatalf("block %d: %v", i, err)
		}
	}
	t.Logf("killed after block %d was flushed: %d blocks stored, %d corrupt", flushed, present, corrupt)
}

// TestTwoProcesses: a child lists models in a loop while this process
// writes models and blocks; neither sees an error (readers in WAL mode
// never wait for the writer; writers wait out each other's locks).
func TestTwoProcesses(t *testing.T) {
	home := t.TempDir()
	reg := openRegistryTest(t, home, RegistryOptions{})
	s := openTest(t, home, KVOptions{MaxBytes: 1 << 30})
	cmd, stdin, out := startChild(t, "lister", home)
	if !out.Scan() || out.Text() != "ready" {
		t.Fatalf("child: %q %v", out.Text(), out.Err())
	}
	for i := range 300 {
		if err := reg.PutModel(Model{Name: fmt.Sprintf("m%03d", i), Template: strings.Repeat("x", 2000)}); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			if err := reg.DeleteModel(fmt.Sprintf("m%03d", i/2)); err != nil && !errors.Is(err, ErrNotFound) {
				t.Fatal(err)
			}
		}
		save(s, testFP, makeBlock(i, 32<<10))
		if i%10 == 9 {
			s.Flush()
		}
	}
	s.Flush()
	stdin.Close()
	if !out.Scan() {
		t.Fatalf("child said nothing: %v", out.Err())
	}
	var lists, fails int
	var first string
	fmt.Sscanf(out.Text(), "lists %d errors %d first %s", &lists, &fails, &first)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	if fails != 0 || lists == 0 {
		t.Fatalf("child: %s", out.Text())
	}
	if st := s.KVStats(""); st.Blocks != 300 || st.Dropped != 0 {
		t.Fatalf("KVStats = %+v", st)
	}
	t.Logf("child listed models %d times", lists)
}
