// Package vet is the safety net for a GPU backend on a device folio has not
// computed on before: the first time a device is opened (keyed by the
// backend, the device, its driver and folio's version), a seconds-long
// subset of the conformance cases and a short greedy generation run on it
// against the CPU backend, and the verdict is remembered in a file in
// FOLIO_HOME. A device that failed is not used: the caller computes on the
// CPU instead (or, where the user forced the GPU, reports the failure),
// rather than serving wrong tokens from kernels that never met this
// hardware.
package vet

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"folio/gpu"
	"folio/gpu/conformance"
	"folio/gpu/cpu"
	"folio/models/gguf"
	"folio/models/synth"
)

// ErrFailed marks the error of a device that failed its check, now or
// before.
var ErrFailed = errors.New("the device failed folio's first-run check against the CPU")

// Verdict is what the check found on one device, as the file keeps it.
type Verdict struct {
	Pass    bool      `json:"pass"`
	Detail  string    `json:"detail"` // the failed cases, or what passed
	When    time.Time `json:"when"`
	Seconds float64   `json:"seconds"`
}

// Checker runs and remembers the checks; one is shared by the process's
// loads.
type Checker struct {
	// Cases, when set before the first Check, replaces Subset(1): for an
	// emulated device in tests, where the whole subset takes minutes.
	Cases func() []conformance.Case

	path    string // the verdicts' JSON file; "" keeps them in memory
	version string // folio's, part of every key
	check   func(dev gpu.Backend) (bool, string)

	mu       sync.Mutex
	verdicts map[string]Verdict
	said     map[string]bool // keys whose failure this process has reported
	runs     int             // checks run (for tests)
}

// New is a checker keeping its verdicts in dir/gpu-checks.json ("" for
// none), for folio version.
func New(dir, version string) *Checker {
	c := &Checker{version: version, verdicts: map[string]Verdict{}, said: map[string]bool{}}
	c.check = func(dev gpu.Backend) (bool, string) {
		cases := Subset
		if c.Cases != nil {
			cases = func(uint64) []conformance.Case { return c.Cases() }
		}
		return checkDevice(dev, cases(1))
	}
	if dir != "" {
		c.path = filepath.Join(dir, "gpu-checks.json")
		if b, err := os.ReadFile(c.path); err == nil {
			_ = json.Unmarshal(b, &c.verdicts) // a damaged file only means checking again
		}
	}
	return c
}

// Check vets dev, named by device (the backend, device and driver, e.g.
// "cuda NVIDIA H200 sm_90 driver 12080"): nil when it passed, now or
// before; an error wrapping ErrFailed when it failed. The first failure a
// process meets says what failed; later ones of the same device say only
// that it is known to fail (quiet is true), so that a caller can say so
// once.
func (c *Checker) Check(dev gpu.Backend, device string) (quiet bool, err error) {
	key := device + " folio " + c.version
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.verdicts[key]
	if !ok {
		start := time.Now()
		pass, detail := c.check(dev)
		c.runs++
		v = Verdict{Pass: pass, Detail: detail, When: start.UTC(), Seconds: time.Since(start).Seconds()}
		c.verdicts[key] = v
		c.save()
	}
	if v.Pass {
		return false, nil
	}
	quiet = c.said[key]
	c.said[key] = true
	return quiet, fmt.Errorf("%w on %s (%s, %s; delete %s to check again)", ErrFailed, device, v.Detail,
		v.When.Format(time.RFC3339), c.fileName())
}

func (c *Checker) fileName() string {
	if c.path == "" {
		return "nothing: kept in memory"
	}
	return c.path
}

// save writes the verdicts through a temporary file and a rename, so that
// a crash leaves the old file or the new one. A verdict that cannot be
// written is only checked again next time.
func (c *Checker) save() {
	if c.path == "" {
		return
	}
	b, err := json.MarshalIndent(c.verdicts, "", "  ")
	if err != nil {
		return
	}
	if err := os.MkdirAll(filepath.Dir(c.path), 0o755); err != nil {
		return
	}
	tmp := c.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err == nil {
		_ = os.Rename(tmp, c.path)
	}
}

// genSteps are the greedy steps of the generation check.
const genSteps = 8

// checkDevice runs cases on dev and the CPU, then a greedy generation on
// a tiny synthetic llama, and says what failed.
func checkDevice(dev gpu.Backend, cases []conformance.Case) (bool, string) {
	ref := cpu.NewReference(1)
	defer ref.Close()
	var failed []string
	checks := conformance.Check(ref, dev, cases)
	for _, r := range checks {
		if !r.Pass() {
			what := r.Err
			if what == "" {
				what = fmt.Sprintf("NMSE %.3g > %.3g", r.NMSE, r.Tol)
			}
			failed = append(failed, r.Op+": "+what)
		}
	}
	gen := "generation not run"
	if dir, err := os.MkdirTemp("", "folio-vet-"); err == nil {
		path := filepath.Join(dir, "tiny.gguf")
		if err = synth.WriteTiny(path, "llama", gguf.TypeQ8_0, 1); err == nil {
			var g conformance.GenCheck
			if g, err = conformance.CheckGeneration(path, ref, dev, genSteps); err == nil && !g.Pass() {
				err = fmt.Errorf("logits NMSE %.3g (bound %.3g), %d of %d tokens differ", g.Worst, conformance.GenTolerance, g.Mismatches, g.Steps)
			}
		}
		os.RemoveAll(dir)
		if err != nil {
			failed = append(failed, "greedy generation: "+err.Error())
		} else {
			gen = fmt.Sprintf("%d greedy tokens as the CPU's", genSteps)
		}
	}
	if len(failed) > 0 {
		return false, fmt.Sprintf("%d of %d checks failed: %s", len(failed), len(checks)+1, strings.Join(failed, "; "))
	}
	return true, fmt.Sprintf("%d ops within their bounds, %s", len(checks), gen)
}

// Subset is the first-run check's cases: of conformance.Cases(seed), the
// first of each op and variant (its first two words: every weight type of
// MatMul, Embed and ExpertMatMuls, every kind of Attention), so that it
// takes seconds.
func Subset(seed uint64) []conformance.Case {
	var out []conformance.Case
	seen := map[string]bool{}
	for _, c := range conformance.Cases(seed) {
		f := strings.Fields(c.Op)
		op := strings.Join(f[:min(2, len(f))], " ")
		if !seen[op] {
			seen[op] = true
			out = append(out, c)
		}
	}
	return out
}
