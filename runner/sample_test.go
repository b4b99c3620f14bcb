package runner

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestSampleGreedy(t *testing.T) {
	s := NewSampler(SampleOptions{Temperature: 0, RepeatPenalty: 1, Seed: 1})
	for _, c := range []struct {
		name   string
		logits []float32
		want   int32
	}{
		{"max", []float32{0, 3, 1}, 1},
		{"tie goes to the lower id", []float32{5, 2, 5}, 0},
		{"negative", []float32{-3, -1, -2}, 1},
	} {
		if got := s.Sample(c.logits, nil); got != c.want {
			t.Errorf("%s: Sample(%v) = %d, want %d", c.name, c.logits, got, c.want)
		}
	}
}

func TestSampleTruncationsGiveTheTop(t *testing.T) {
	logits := randomLogits(1000, 3)
	want := int32(slices.Index(logits, slices.Max(logits)))
	for name, opt := range map[string]SampleOptions{
		"top_k 1":    {Temperature: 1, TopK: 1, TopP: 1, RepeatPenalty: 1, Seed: 7},
		"top_p tiny": {Temperature: 1, TopP: 1e-9, RepeatPenalty: 1, Seed: 7},
		"min_p 1":    {Temperature: 1, MinP: 1, TopP: 1, RepeatPenalty: 1, Seed: 7},
	} {
		s := NewSampler(opt)
		for range 20 {
			if got := s.Sample(logits, nil); got != want {
				t.Fatalf("%s: sampled %d, want the top token %d", name, got, want)
			}
		}
	}
}

func TestSampleSeeded(t *testing.T) {
	logits := randomLogits(500, 4)
	run := func(seed int64) []int32 {
		s := NewSampler(SampleOptions{Temperature: 1, TopK: 50, TopP: 0.95, RepeatPenalty: 1, Seed: seed})
		var out []int32
		for range 50 {
			out = append(out, s.Sample(logits, nil))
		}
		return out
	}
	a, b, c := run(42), run(42), run(43)
	if !slices.Equal(a, b) {
		t.Errorf("same seed, different tokens:\n%v\n%v", a, b)
	}
	if slices.Equal(a, c) {
		t.Errorf("seeds 42 and 43 gave the same 50 tokens")
	}
}

// TestSampleDistribution: at temperature 1 with nothing truncated, the
// frequencies follow softmax(logits).
func TestSampleDistribution(t *testing.T) {
	logits := []float32{1, 2, 0.5, -1, 1.5}
	var z float64
	for _, l := range logits {
		z += math.Exp(float64(l))
	}
	s := NewSampler(SampleOptions{Temperature: 1, TopP: 1, RepeatPenalty: 1, Seed: 5})
	const n = 200000
	counts := make([]int, len(logits))
	for range n {
		counts[s.Sample(logits, nil)]++
	}
	for i, l := range logits {
		p := math.Exp(float64(l)) / z
		got := float64(counts[i]) / n
		if sd := math.Sqrt(p * (1 - p) / n); math.Abs(got-p) > 5*sd {
			t.Errorf("token %d: frequency %.4f, want %.4f ± %.4f", i, got, p, 5*sd)
		}
	}
}

func TestTopKMatchesSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		n := 1 + r.IntN(300)
		c := make([]candidate, n)
		for i := range c {
			c[i] = candidate{id: int32(i), logit: float32(r.IntN(20))} // many ties
		}
		k := 1 + r.IntN(n)
		want := slices.Clone(c)
		slices.SortFunc(want, byLogit)
		if got := topK(c, k); !slices.Equal(got, want[:k]) {
			t.Fatalf("n %d k %d:\n got %v\nwant %v", n, k, got, want[:k])
		}
	}
}

func TestRepeatPenalty(t *testing.T) {
	s := NewSampler(SampleOptions{Temperature: 0, RepeatPenalty: 2, RepeatLastN: 2, Seed: 1})
	logits := []float32{3, 2.5, -1}
	if got := s.Sample(logits, []int32{0}); got != 1 { // 3/2 = 1.5 < 2.5
		t.Errorf("penalized token 0 still chosen: got %d", got)
	}
	if got := s.Sample(logits, []int32{0, 2, 2}); got != 0 { // token 0 is outside the last 2
		t.Errorf("repeat_last_n 2 ignored: got %d", got)
	}
	if logits[0] != 3 {
		t.Errorf("Sample modified the logits: %v", logits)
	}
}

func TestSampleOptionsCheck(t *testing.T) {
	for _, o := range []SampleOptions{
		{Temperature: -1, RepeatPenalty: 1},
		{Temperature: 1, TopP: -0.1, RepeatPenalty: 1},
		{Temperature: 1, MinP: 2, RepeatPenalty: 1},
		{Temperature: 1, RepeatPenalty: 0},
		{Temperature: 1, RepeatPenalty: 1, RepeatLastN: -2},
	} {
		if o.Check() == nil {
			t.Errorf("Check(%+v) = nil, want an error", o)
		}
	}
	d := DefaultSampleOptions()
	if err := d.Check(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

func randomLogits(n int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, seed))
	l := make([]float32, n)
	for i := range l {
		l[i] = float32(r.NormFloat64() * 3)
	}
	return l
}

// TestTypicalP: with one token far more likely than the rest, the typical
// set at a small mass is that token; typical_p 1 changes nothing.
func TestTypicalP(t *testing.T) {
	logits := []float32{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	s := NewSampler(SampleOptions{Temperature: 1, TopP: 1, TypicalP: 0.05, RepeatPenalty: 1, Seed: 3})
	// uniform: every token is exactly typical; the set is the first by id
	if got := s.Sample(logits, nil); got != 0 {
		t.Errorf("uniform logits, typical_p 0.05: got %d, want 0", got)
	}
	skewed := []float32{8, 1, 1, 1, 1, 1, 1, 1, 1, 1}
	counts := map[int32]int{}
	s = NewSampler(SampleOptions{Temperature: 1, TopP: 1, TypicalP: 0.5, RepeatPenalty: 1, Seed: 3})
	for range 200 {
		counts[s.Sample(skewed, nil)]++
	}
	if counts[0] != 200 {
		t.Errorf("skewed logits, typical_p 0.5: %v, want always token 0", counts)
	}
	if err := (&SampleOptions{Temperature: 1, TypicalP: -1, RepeatPenalty: 1}).Check(); err == nil {
		t.Error("typical_p -1 accepted")
	}
}

// Greedy sampling without penalties skips the candidate list; it must
// pick what the full path picks, the first of tied maxima included.
func TestGreedyFastPath(t *testing.T) {
	logits := []float32{0.5, 2, -1, 2, 1.5, 2}
	fast := NewSampler(SampleOptions{Temperature: 0, RepeatPenalty: 1})
	slow := NewSampler(SampleOptions{Temperature: 0, RepeatPenalty: 1, PresencePenalty: 1e-30}) // takes the full path
	if a, b := fast.Sample(logits, nil), slow.Sample(logits, nil); a != 1 || b != 1 {
		t.Errorf("greedy over tied maxima: fast %d, full %d, want 1 (the first)", a, b)
	}
}

// TestLogitBias: the bias is added before sampling: -100 on the greedy
// token gives the next one, +100 forces a token even at temperature 1
// under top_k, ids outside the logits are skipped, and the logits stay
// untouched.
func TestLogitBias(t *testing.T) {
	logits := []float32{1, 4, 3, -2}
	for _, c := range []struct {
		name string
		opt  SampleOptions
		want int32
	}{
		{"ban the greedy token", SampleOptions{Temperature: 0, RepeatPenalty: 1, LogitBias: map[int32]float32{1: -100}}, 2},
		{"force a token", SampleOptions{Temperature: 0, RepeatPenalty: 1, LogitBias: map[int32]float32{3: 100}}, 3},
		{"force under top_k", SampleOptions{Temperature: 1, TopK: 1, TopP: 1, RepeatPenalty: 1, Seed: 5, LogitBias: map[int32]float32{0: 100}}, 0},
		{"out of range skipped", SampleOptions{Temperature: 0, RepeatPenalty: 1, LogitBias: map[int32]float32{-1: 100, 9: 100}}, 1},
	} {
		s := NewSampler(c.opt)
		for range 10 {
			if got := s.Sample(logits, nil); got != c.want {
				t.Fatalf("%s: sampled %d, want %d", c.name, got, c.want)
			}
		}
	}
	if logits[1] != 4 {
		t.Errorf("Sample modified the logits: %v", logits)
	}
	bad := SampleOptions{Temperature: 1, RepeatPenalty: 1, LogitBias: map[int32]float32{2: float32(math.NaN())}}
	if bad.Check() == nil {
		t.Error("a NaN bias accepted")
	}
}
