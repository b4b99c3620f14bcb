package arch

import (
	"fmt"
	"math"

	"folio/models/gguf"
)

// yarnKeyArchs read YaRN's ramp parameters from the file
// (rope.scaling.yarn_beta_fast and _slow, yarn_log_multiplier); the others
// take llama.cpp's defaults, whatever the file says.
var yarnKeyArchs = map[string]bool{"mistral3": true, "deepseek2": true, "mistral4": true}

// yarnRope sets r for YaRN scaling by factor, as llama.cpp computes it
// (llama_context's yarn_attn_factor, ggml's rope_yarn and
// ggml_rope_yarn_corr_dims), in float32 where it does. Each pair's angle is
// a blend of the original angle θ (extrapolation) and θ/factor
// (interpolation): the pairs that turn fewer than beta_slow times over the
// original context are interpolated, those that turn more than beta_fast
// times are kept, and a linear ramp over the pair index joins them. The
// rotated values are scaled by 1 + 0.1·ln(factor) (times attn_factor, over
// the yarn_log_multiplier's mscale when given). freqs, when the file has
// rope_freqs, divide each pair's frequency first.
func yarnRope(f *gguf.File, c *Config, factor float64, attn float32, freqs []float32) error {
	p := c.Arch + "."
	r := &c.Rope
	beta := func(key string, def float64) (float64, error) {
		if !yarnKeyArchs[c.Arch] {
			return def, nil
		}
		return hyper(f, p+"rope.scaling."+key, def, "a positive number of turns", func(v float64) bool { return v > 0 })
	}
	fast, err := beta("yarn_beta_fast", 32)
	if err != nil {
		return err
	}
	slow, err := beta("yarn_beta_slow", 1)
	if err != nil {
		return err
	}
	logMul := 0.0
	if yarnKeyArchs[c.Arch] {
		if logMul, err = hyper(f, p+"rope.scaling.yarn_log_multiplier", 0, "a number from 0 to 100",
			func(v float64) bool { return v >= 0 && v <= 100 }); err != nil {
			return err
		}
	}
	orig := c.Context
	if v, ok := f.Int(p + "rope.scaling.original_context_length"); ok {
		if v <= 0 || v > 1<<24 {
			return fmt.Errorf("%srope.scaling.original_context_length = %d is out of range", p, v)
		}
		orig = int(v)
	}
	if orig == 0 {
		return fmt.Errorf("yarn scaling needs %scontext_length or %srope.scaling.original_context_length", p, p)
	}

	freqScale := float32(1) / float32(factor)
	low, high := yarnCorrDims(r.Dims, orig, r.Base, float32(fast), float32(slow))
	r.Scale = 1
	r.Factors = make([]float32, r.Dims/2)
	for i := range r.Factors {
		ff := float32(1)
		if freqs != nil {
			ff = freqs[i]
		}
		// ggml: θ = θe·freqScale·(1-mix) + θe·mix, θe = θ/ff: a divisor of
		// ff / (freqScale·(1-mix) + mix).
		mix := yarnRamp(low, high, i)
		r.Factors[i] = ff / (freqScale*(1-mix) + mix)
	}
	lm, num := float32(logMul), float32(1)
	if latentArchs[c.Arch] && lm != 0 {
		// llama.cpp divides DeepSeek's by the 0.1 its converter multiplied
		// in, and takes it for mscale too, so that mscale over the log
		// multiplier's is 1 (its TAG_DEEPSEEK2_YARN_LOG_MUL_FIX).
		lm /= 0.1
		num = lm
	}
	r.MScale = yarnMScale(freqScale, num, lm) * attn
	return nil
}

// yarnCorrDims is ggml_rope_yarn_corr_dims: the pair indices (as floats)
// where the ramp starts and ends, from the dimension at which a pair turns
// betaFast and betaSlow times over the original context.
func yarnCorrDims(dims, orig int, base, betaFast, betaSlow float32) (low, high float32) {
	corr := func(turns float32) float32 {
		return float32(dims) * logf(float32(orig)/(turns*2*math.Pi)) / (2 * logf(base))
	}
	low = max(0, float32(math.Floor(float64(corr(betaFast)))))
	high = min(float32(dims-1), float32(math.Ceil(float64(corr(betaSlow)))))
	return low, high
}

// yarnRamp is rope_yarn_ramp: 1 (keep the original angle) for pairs below
// low, 0 (interpolate) above high, linear between.
func yarnRamp(low, high float32, pair int) float32 {
	y := (float32(pair) - low) / max(0.001, high-low)
	return 1 - min(1, max(0, y))
}

// yarnMScale is the magnitude scale of the rotated values: llama_context's
// yarn_attn_factor (mscale over the log multiplier's, cancelled by
// 1/(1+0.1·ln factor)) times what rope_yarn multiplies it by again.
func yarnMScale(freqScale, num, logMul float32) float32 {
	return yarnAttnFactor(freqScale, num, logMul) * (1 + 0.1*logf(1/freqScale))
}

// yarnAttnFactor is llama_context's yarn_attn_factor before
// rope.scaling.attn_factor: get_mscale(factor, num) over the log
// multiplier's (num's alone without one), times 1/(1+0.1·ln factor).
func yarnAttnFactor(freqScale, num, logMul float32) float32 {
	factor := 1 / freqScale
	mscale := func(m float32) float32 {
		if factor <= 1 {
			return 1
		}
		return 0.1*m*logf(factor) + 1
	}
	attn := mscale(num)
	if logMul != 0 {
		attn = mscale(num) / mscale(logMul)
	}
	return attn * (1 / (1 + 0.1*logf(factor)))
}

// logf is C's logf: ln x rounded to float32.
func logf(x float32) float32 { return float32(math.Log(float64(x))) }

// ropeAttnFactor reads rope.scaling.attn_factor, which llama.cpp multiplies
// into every rotation's magnitude whatever the scaling type.
func ropeAttnFactor(f *gguf.File, p string) (float32, error) {
	v, err := hyper(f, p+"rope.scaling.attn_factor", 1, "a positive number (1 leaves rope unscaled)",
		func(v float64) bool { return v > 0 && v <= 1e3 })
	return float32(v), err
}
