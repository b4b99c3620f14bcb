package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"folio/models/gguf"
)

// A model whose hyperparameters cannot work (a rope base of 0 made every
// logit NaN and the generate a 500) is refused when it loads, with 422
// naming the key, and the server keeps serving its other models.
func TestUnusableHyperparameters(t *testing.T) {
	_, base := newTestServer(t, func(w *gguf.Writer) { w.Set("qwen2.rope.freq_base", float32(0)) })
	post := func(model string) (int, string) {
		body := `{"model": "` + model + `", "prompt": "hi", "stream": false, "options": {"num_predict": 2}}`
		resp, err := http.Post(base+"/api/generate", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	status, body := post("tiny-qwen2")
	if status != http.StatusUnprocessableEntity || !json.Valid([]byte(body)) || !strings.Contains(body, "qwen2.rope.freq_base = 0") {
		t.Errorf("generate with a rope base of 0: %d %s; want 422 naming qwen2.rope.freq_base", status, body)
	}
	if status, body := post("stories260k"); status != http.StatusOK {
		t.Errorf("another model after the refusal: %d %s", status, body)
	}
}
