package arch

import (
	"math"
	"slices"
	"testing"
)

// TestRoute: the gatings choose the largest logits, best first, the
// first index among equals; normalized softmax weights of the chosen
// equal softmax over the chosen logits (e / (1 + e) for logits 3 and 2).
func TestRoute(t *testing.T) {
	hi := float32(1 / (1 + math.Exp(-1)))
	for _, c := range []struct {
		name string
		g    Gating
		norm bool
		want []float32
	}{
		{"softmax, normalized", GatingSoftmax, true, []float32{hi, 1 - hi}},
		{"softmax over the chosen", GatingSoftmaxChosen, false, []float32{hi, 1 - hi}},
	} {
		logits := []float32{1, 3, 2, 0, 2}
		chosen, w := make([]int32, 2), make([]float32, 2)
		route(logits, routing{gating: c.g, norm: c.norm}, chosen, w, make([]float32, 5), make([]float32, 5))
		if !slices.Equal(chosen, []int32{1, 2}) {
			t.Errorf("%s: chose %v, want [1 2]", c.name, chosen)
		}
		for j := range w {
			if math.Abs(float64(w[j]-c.want[j])) > 1e-6 {
				t.Errorf("%s: weights %v, want %v", c.name, w, c.want)
			}
		}
	}
	// Sigmoid gating: the bias moves the choice (expert 4 over 2, their
	// logits equal) and not the weights, which are normalized, then
	// scaled.
	chosen, w := make([]int32, 2), make([]float32, 2)
	sig := func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
	how := routing{gating: GatingSigmoid, norm: true, scale: 2.5, bias: []float32{0, 0, 0, 0, 0.01}}
	route([]float32{1, 3, 2, 0, 2}, how, chosen, w, make([]float32, 5), make([]float32, 5))
	want := []float64{2.5 * sig(3) / (sig(3) + sig(2)), 2.5 * sig(2) / (sig(3) + sig(2))}
	if !slices.Equal(chosen, []int32{1, 4}) || math.Abs(float64(w[0])-want[0]) > 1e-6 || math.Abs(float64(w[1])-want[1]) > 1e-6 {
		t.Errorf("sigmoid with a bias: chose %v weighted %v, want [1 4] weighted %v", chosen, w, want)
	}
	// Unnormalized softmax weights are the chosen probabilities.
	chosen, w = make([]int32, 1), make([]float32, 1)
	route([]float32{0, 0}, routing{gating: GatingSoftmax}, chosen, w, make([]float32, 2), make([]float32, 2))
	if chosen[0] != 0 || w[0] != 0.5 {
		t.Errorf("two equal logits: chose %d with weight %v, want 0 with 0.5", chosen[0], w[0])
	}
}

// TestRouteGroups: with groups, a token's experts come from the groups
// whose two best gated values sum highest, even when a better single
// expert sits in another group.
func TestRouteGroups(t *testing.T) {
	// groups of two; their sigmoid sums: σ5+σ0 = 1.493, 2σ3 = 1.905,
	// σ4+σ1 = 1.713, σ0+σ5.5 = 1.496 (group 0 holds the second-best
	// expert, and is searched last)
	logits := []float32{5, 0, 3, 3, 4, 1, 0, 5.5}
	for _, c := range []struct {
		used int
		want []int32
	}{{1, []int32{2, 3}}, {2, []int32{4, 2}}, {3, []int32{7, 4}}, {4, []int32{7, 0}}} {
		chosen, w := make([]int32, 2), make([]float32, 2)
		route(logits, routing{gating: GatingSigmoid, groups: 4, used: c.used}, chosen, w, make([]float32, 8), make([]float32, 8))
		if !slices.Equal(chosen, c.want) {
			t.Errorf("%d groups searched: chose %v, want %v", c.used, chosen, c.want)
		}
	}
}
