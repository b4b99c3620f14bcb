package loadgen

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSpecsShape(t *testing.T) {
	s := Shape{PromptMean: 200, OutputMean: 50, Shared: 10}
	a, err := s.Specs(20000, 7)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := s.Specs(20000, 7)
	if !slices.Equal(a, b) {
		t.Fatal("the same seed gave different workloads")
	}
	var prompt, output float64
	var logs []float64
	for _, x := range a {
		if x.Shared != 10 || x.Unique < 1 || x.PromptLen() > 1600 || x.Output < 1 || x.Output > 400 {
			t.Fatalf("spec %+v outside the clamps", x)
		}
		prompt += float64(x.PromptLen())
		output += float64(x.Output)
		logs = append(logs, math.Log(float64(x.PromptLen())))
	}
	n := float64(len(a))
	// The clamp at 8× the mean trims the long tail by a few percent.
	if m := prompt / n; m < 180 || m > 210 {
		t.Errorf("prompt mean %.1f, want about 200", m)
	}
	if m := output / n; m < 45 || m > 52 {
		t.Errorf("output mean %.1f, want about 50", m)
	}
	slices.Sort(logs)
	if median := math.Exp(logs[len(logs)/2]); math.Abs(median-200*math.Exp(-0.5)) > 8 {
		t.Errorf("prompt median %.1f, want about %.1f (lognormal, σ 1)", median, 200*math.Exp(-0.5))
	}
	f, _ := Shape{PromptMean: 20.4, OutputMean: 7, Fixed: true}.Specs(3, 1)
	for _, x := range f {
		if x.PromptLen() != 20 || x.Output != 7 {
			t.Errorf("fixed lengths: %+v", x)
		}
	}
	if _, err := (Shape{PromptMean: 0, OutputMean: 5}).Specs(1, 1); err == nil {
		t.Error("a zero prompt mean was accepted")
	}
}

func TestWordsShareTheirPrefix(t *testing.T) {
	a := Words(Spec{Shared: 5, Unique: 7, Seed: 1})
	b := Words(Spec{Shared: 5, Unique: 3, Seed: 2})
	wa, wb := strings.Fields(a), strings.Fields(b)
	if len(wa) != 12 || len(wb) != 8 || !slices.Equal(wa[:5], wb[:5]) || slices.Equal(wa[5:8], wb[5:8]) {
		t.Errorf("%q and %q", a, b)
	}
}

func TestPercentile(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{50, 5}, {99, 10}, {10, 1}, {0, 1}, {100, 10}} {
		if got := percentile(ds, c.p); got != c.want {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
	if percentile(nil, 50) != 0 {
		t.Error("percentile of nothing is not 0")
	}
}
