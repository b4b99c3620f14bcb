package synth

import "fmt"

// RopeScaling is the rope.scaling.* metadata of a YaRN-scaled model (Qwen
// 2.5 and Qwen3 long-context files, Ministral 3); Config.RopeScale is
// linear scaling's. Zero fields other than Type are not written, so the
// reader's defaults apply.
type RopeScaling struct {
	Type       string  // "" (none) or "yarn"
	Factor     float32 // rope.scaling.factor: context extension, e.g. 4
	OrigCtx    int     // rope.scaling.original_context_length (yarn)
	AttnFactor float32 // rope.scaling.attn_factor
	BetaFast   float32 // rope.scaling.yarn_beta_fast (read by mistral3)
	BetaSlow   float32 // rope.scaling.yarn_beta_slow (read by mistral3)
	LogMul     float32 // rope.scaling.yarn_log_multiplier (read by mistral3)
}

func (r RopeScaling) check(linear float32) error {
	switch {
	case r.Type == "" && r != RopeScaling{}:
		return fmt.Errorf("%w: rope scaling parameters without a type; set --rope-scaling yarn", ErrConfig)
	case r.Type != "" && r.Type != "yarn":
		return fmt.Errorf("%w: rope scaling %q (known: yarn here; linear is --rope-scale)", ErrConfig, r.Type)
	case r.Type != "" && linear != 0:
		return fmt.Errorf("%w: both yarn and linear rope scaling; choose one", ErrConfig)
	case r.Type != "" && !(r.Factor > 0):
		return fmt.Errorf("%w: rope scaling %s needs a factor above 0 (--rope-factor)", ErrConfig, r.Type)
	case r.OrigCtx < 0 || r.AttnFactor < 0 || r.BetaFast < 0 || r.BetaSlow < 0 || r.LogMul < 0:
		return fmt.Errorf("%w: negative rope scaling parameter in %+v", ErrConfig, r)
	}
	return nil
}

// metadata sets the keys, under the architecture prefix a, that llama.cpp's
// converter writes for r.
func (r RopeScaling) metadata(a string, set func(string, any)) {
	if r.Type == "" {
		return
	}
	set(a+"rope.scaling.type", r.Type)
	set(a+"rope.scaling.factor", r.Factor)
	if r.OrigCtx > 0 {
		set(a+"rope.scaling.original_context_length", uint32(r.OrigCtx))
	}
	for _, f := range []struct {
		key string
		v   float32
	}{{"attn_factor", r.AttnFactor}, {"yarn_beta_fast", r.BetaFast}, {"yarn_beta_slow", r.BetaSlow}, {"yarn_log_multiplier", r.LogMul}} {
		if f.v > 0 {
			set(a+"rope.scaling."+f.key, f.v)
		}
	}
}
