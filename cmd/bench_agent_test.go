package cmd

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"folio/internal/loadgen"
)

// agentTemplate is a ChatML template that writes the tools into the first
// message, as agents' templates do.
const agentTemplate = `{%- for m in messages -%}
<|im_start|>{{ m.role }}
{% if loop.first and tools %}{% for t in tools %}{{ t | tojson }}
{% endfor %}{% endif %}{{ m.content }}<|im_end|>
{% endfor -%}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}`

// TestBenchAgent runs a short agent loop and checks that the report's
// figures are those of its turns: which turns each pass ran, in which
// order, with the same prompts; cached tokens with the cache on, none with
// it off, the turn after the restart restored from the store; and the
// ratios recomputed from the turns. Timings are not checked.
func TestBenchAgent(t *testing.T) {
	dir := t.TempDir()
	tmpl := filepath.Join(dir, "chatml.jinja")
	if err := os.WriteFile(tmpl, []byte(agentTemplate), 0o644); err != nil {
		t.Fatal(err)
	}
	chart := filepath.Join(dir, "agent.png")
	var r loadgen.AgentReport
	benchJSON(t, &r, "bench", "agent", "--model", tinySynth(t), "--template", tmpl, "--tools", "2",
		"--system-tokens", "1200", "--turns", "4", "--agents", "2", "--result-tokens", "40-80", "--reply-tokens", "4-8",
		"--restart-after", "2", "--no-cache-every", "2", "--home", filepath.Join(dir, "home"), "--png", chart)

	const turns, agents, block = 4, 2, 16
	if r.Turns != turns || r.Agents != agents || r.Tools != 2 || r.RestartTurn != 3 || r.SystemTokens < 1200 || r.SystemTokens > 1220 {
		t.Fatalf("header: %+v", r)
	}
	// every turn of every agent, interleaved; without the cache turns 1
	// and 3 (every second, and the turn after the restart)
	var all, thinned [][2]int
	for turn := 1; turn <= turns; turn++ {
		for a := 1; a <= agents; a++ {
			all = append(all, [2]int{a, turn})
			if turn != 2 && turn != 4 {
				thinned = append(thinned, [2]int{a, turn})
			}
		}
	}
	order := func(p loadgen.AgentPass) (o [][2]int) {
		for _, x := range p.Turns {
			o = append(o, [2]int{x.Agent, x.Turn})
		}
		return o
	}
	if !slices.Equal(order(r.Cache), all) || !slices.Equal(order(r.Restart), all) || !slices.Equal(order(r.NoCache), thinned) {
		t.Fatalf("turns run: cache %v, restart %v, no cache %v", order(r.Cache), order(r.Restart), order(r.NoCache))
	}
	for _, c := range r.Cache.Turns {
		rs, nc := r.Restart.Find(c.Agent, c.Turn), r.NoCache.Find(c.Agent, c.Turn)
		if rs.Prompt != c.Prompt || (nc != nil && nc.Prompt != c.Prompt) {
			t.Errorf("agent %d turn %d: prompts of %d, %d and %v tokens: the passes must send the same prompts", c.Agent, c.Turn, c.Prompt, rs.Prompt, nc)
		}
		if c.TTFTms <= 0 || c.Output < 1 {
			t.Errorf("cache pass, agent %d turn %d: %+v", c.Agent, c.Turn, c)
		}
		if c.Turn == 1 {
			continue
		}
		// the agent's last prompt and reply come back from the cache, but
		// for the last partial block and the reply's last token
		if c.Shared < r.SystemTokens || c.Shared >= c.Prompt || c.Cached > c.Shared || c.Cached < c.Shared-2*block || c.Restored != 0 {
			t.Errorf("cache pass, agent %d turn %d: %+v", c.Agent, c.Turn, c)
		}
		if rs.Turn != r.RestartTurn && (rs.Cached != c.Cached || rs.Restored != 0) {
			t.Errorf("restart pass, agent %d turn %d: %+v; the cache pass had %+v", rs.Agent, rs.Turn, rs, c)
		}
	}
	// the first request after the restart finds everything in the store;
	// the second, the shared system prompt already loaded, the rest
	first, second := r.Restart.Find(1, 3), r.Restart.Find(2, 3)
	if first.Restored != first.Cached || first.Cached < first.Shared-2*block ||
		second.Restored == 0 || second.Restored >= second.Cached || second.Cached < second.Shared-2*block {
		t.Errorf("the turn after the restart: %+v, %+v", first, second)
	}
	// (system_tokens also counts the template's text after the task)
	if a2 := r.Cache.Find(2, 1); a2.Cached < r.SystemTokens-64 || a2.Cached%block != 0 {
		t.Errorf("agent 2's first turn must find the system prompt agent 1 computed: %+v", a2)
	}
	for _, n := range r.NoCache.Turns {
		if n.Cached != 0 || n.Restored != 0 {
			t.Errorf("no-cache pass, agent %d turn %d: %+v", n.Agent, n.Turn, n)
		}
	}

	// the summary, from the turns
	var fracs, shared, on, off []float64
	for _, c := range r.Cache.Turns {
		if c.Turn >= 2 {
			fracs = append(fracs, float64(c.Cached)/float64(c.Prompt))
			shared = append(shared, float64(c.Shared)/float64(c.Prompt))
			if r.NoCache.Find(c.Agent, c.Turn) != nil {
				on = append(on, c.TTFTms)
			}
		}
	}
	for _, n := range r.NoCache.Turns {
		if n.Turn >= 2 {
			off = append(off, n.TTFTms)
		}
	}
	slices.Sort(fracs)
	restart := (r.NoCache.Find(1, 3).TTFTms/first.TTFTms + r.NoCache.Find(2, 3).TTFTms/second.TTFTms) / 2
	for _, f := range []struct {
		name      string
		got, want float64
	}{
		{"cached_fraction", r.CachedFraction, (fracs[2] + fracs[3]) / 2},
		{"min_cached_fraction", r.MinCachedFraction, fracs[0]},
		{"shared_fraction", r.SharedFraction, loadgen.Median(shared)},
		{"ttft_ratio", r.TTFTRatio, loadgen.Median(off) / loadgen.Median(on)},
		{"restart_ratio", r.RestartRatio, restart},
		{"cache median_ttft_ms", r.Cache.MedianTTFTms, loadgen.Median(append(on, r.Cache.Find(1, 2).TTFTms, r.Cache.Find(2, 2).TTFTms, r.Cache.Find(1, 4).TTFTms, r.Cache.Find(2, 4).TTFTms))},
	} {
		if math.Abs(f.got-f.want) > 1e-9*math.Abs(f.want) || f.want <= 0 {
			t.Errorf("%s = %v, want %v from the turns", f.name, f.got, f.want)
		}
	}

	data, err := os.ReadFile(chart)
	if err != nil {
		t.Fatal(err)
	}
	if img, err := png.Decode(bytes.NewReader(data)); err != nil || img.Bounds().Dx() < 500 {
		t.Errorf("--png wrote no chart: %v", err)
	}
}

// TestBenchAgentBadFlags: flags that cannot make a run say which to change.
func TestBenchAgentBadFlags(t *testing.T) {
	dir := t.TempDir()
	tmpl := filepath.Join(dir, "chatml.jinja")
	if err := os.WriteFile(tmpl, []byte(agentTemplate), 0o644); err != nil {
		t.Fatal(err)
	}
	model := tinySynth(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--result-tokens", "900-300"}, "--result-tokens"},
		{[]string{"--reply-tokens", "0"}, "--reply-tokens"},
		{[]string{"--turns", "4", "--restart-after", "4"}, "restart after turn 4"},
		{[]string{"--system-tokens", "50"}, "fewer tools"},
		{[]string{"--template", ""}, "--template FILE.jinja"},
	} {
		args := append([]string{"bench", "agent", "--model", model, "--template", tmpl, "--tools", "2", "--system-tokens", "1200"}, c.args...)
		out, err := execute(t, args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v (%s), want an error naming %q", c.args, err, out, c.want)
		}
	}
}
