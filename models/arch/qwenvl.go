package arch

import (
	"fmt"
	"reflect"

	"folio/models/gguf"
)

// readMRope checks the M-RoPE sections of a Qwen-VL text model
// (rope.dimension_sections, which llama.cpp requires): four counts of
// rotated pairs that together are no more than the head's. A text
// position is the same in every section, so they change nothing here.
func readMRope(f *gguf.File, p string, c *Config) error {
	key := p + "rope.dimension_sections"
	raw, ok := f.Get(key)
	if !ok {
		return fmt.Errorf("no %s: a %s file must have its M-RoPE sections", key, c.Arch)
	}
	a, isArray := raw.(gguf.Array)
	if !isArray || a.Len() < 3 || a.Len() > 4 {
		return fmt.Errorf("%s is %v; want 3 or 4 counts of rotated pairs", key, raw)
	}
	sum, vs := int64(0), reflect.ValueOf(a.Values)
	for i := range a.Len() {
		n, isInt := gguf.AsInt64(vs.Index(i).Interface())
		if !isInt || n < 0 {
			return fmt.Errorf("%s is %v; want counts of rotated pairs", key, raw)
		}
		sum += n
	}
	if sum == 0 || sum > int64(c.Rope.Dims/2) {
		return fmt.Errorf("%s sums to %d pairs; the head rotates %d", key, sum, c.Rope.Dims/2)
	}
	return nil
}

// readMRopeMoE is readMRope and qwen3moe's experts.
func readMRopeMoE(f *gguf.File, p string, c *Config) error {
	if err := readMRope(f, p, c); err != nil {
		return err
	}
	return readMoE(f, p, c)
}
