package synth

// graniteTiny gives the tiny preset Granite 3's multipliers, the logit
// scale smaller than the real 8 so that random-weight logits keep a
// spread.
func graniteTiny(c *Config) {
	c.EmbedScale, c.AttnScale, c.ResidualScale, c.LogitScale = 12, 0.03125, 0.22, 2
}

// graniteMetadata writes the multipliers GraniteModel of llama.cpp's
// converter writes, each only when set, but logit_scale always (llama.cpp
// requires it): 1 when unset.
func graniteMetadata(c Config, set func(string, any)) {
	a := c.Arch + "."
	for _, kv := range []struct {
		key string
		v   float32
	}{
		{"attention.scale", c.AttnScale}, {"embedding_scale", c.EmbedScale},
		{"residual_scale", c.ResidualScale},
	} {
		if kv.v != 0 {
			set(a+kv.key, kv.v)
		}
	}
	logit := c.LogitScale
	if logit == 0 {
		logit = 1
	}
	set(a+"logit_scale", logit)
}
