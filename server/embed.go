package server

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/ollama/ollama/api"

	"folio/models/tokenizer"
)

func (s *Server) embed(w http.ResponseWriter, r *http.Request) {
	var req api.EmbedRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	var inputs []string
	switch in := req.Input.(type) {
	case string:
		inputs = []string{in}
	case []any:
		for i, v := range in {
			str, ok := v.(string)
			if !ok {
				writeError(w, fmt.Errorf("%w: input[%d] is not a string", errBadRequest, i))
				return
			}
			inputs = append(inputs, str)
		}
	case nil:
	default:
		writeError(w, fmt.Errorf("%w: input must be a string or a list of strings", errBadRequest))
		return
	}
	if req.Model == "" {
		writeError(w, fmt.Errorf("%w: model is required", errBadRequest))
		return
	}
	if _, _, err := options(req.Options); err != nil {
		writeError(w, err)
		return
	}
	start := time.Now()
	l, release, err := s.models.acquire(r.Context(), req.Model, keepAlive(req.KeepAlive))
	if err != nil {
		writeError(w, err)
		return
	}
	defer release()
	resp := api.EmbedResponse{Model: req.Model, Embeddings: [][]float32{}, LoadDuration: time.Since(start)}
	for _, in := range inputs {
		v, n, err := embedIDs(r.Context(), l, encodePrompt(l.model.Tok, in, false), req.Truncate == nil || *req.Truncate, req.Dimensions)
		if err != nil {
			writeError(w, err)
			return
		}
		resp.Embeddings = append(resp.Embeddings, v)
		resp.PromptEvalCount += n
	}
	resp.TotalDuration = time.Since(start)
	writeJSON(w, http.StatusOK, resp)
}

// embeddings is the legacy /api/embeddings: one prompt, float64 values,
// the model's pooled output as it is (Ollama's legacy endpoint does not
// normalize; /api/embed does).
func (s *Server) embeddings(w http.ResponseWriter, r *http.Request) {
	var req api.EmbeddingRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.Model == "" {
		writeError(w, fmt.Errorf("%w: model is required", errBadRequest))
		return
	}
	l, release, err := s.models.acquire(r.Context(), req.Model, keepAlive(req.KeepAlive))
	if err != nil {
		writeError(w, err)
		return
	}
	defer release()
	resp := api.EmbeddingResponse{Embedding: []float64{}}
	if req.Prompt != "" {
		v, err := l.engine.Embed(r.Context(), l.model.Tok.Encode(req.Prompt, tokenizer.EncodeOptions{AddSpecial: true}))
		if err != nil {
			writeError(w, err)
			return
		}
		for _, x := range v {
			resp.Embedding = append(resp.Embedding, float64(x))
		}
	}
	writeJSON(w, http.StatusOK, resp)
}

// embedIDs embeds one input of token ids, shared by /api/embed and
// /v1/embeddings: the model's pooled output scaled to unit length. Input
// longer than the context loses its end when truncate is set (Ollama's
// default), else it is an error. dims > 0 then keeps that many leading
// values and scales them to unit length again, as Ollama does. It returns the vector and the tokens
// embedded.
func embedIDs(ctx context.Context, l *loaded, ids []int32, truncate bool, dims int) ([]float32, int, error) {
	if n := l.model.Opt.NumCtx; len(ids) > n && truncate {
		ids = ids[:n]
	}
	v, err := l.engine.Embed(ctx, ids)
	if err != nil {
		return nil, 0, err
	}
	normalize(v)
	if dims > 0 && dims < len(v) {
		v = v[:dims]
		normalize(v)
	}
	return v, len(ids), nil
}

// generates refuses a generation request for a model made for embeddings
// (embedsOnly), with Ollama's message: "\"m\" does not support generate"
// (endpoint "generate") or "chat".
func generates(l *loaded, model, endpoint string) error {
	if embedsOnly(l.model.File) {
		return fmt.Errorf("%w: %q does not support %s (it makes embeddings: use /api/embed or /v1/embeddings)", errBadRequest, model, endpoint)
	}
	return nil
}

// normalize scales v to unit length in place; a zero vector stays zero.
func normalize(v []float32) {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if sum > 0 {
		scale := 1 / math.Sqrt(sum)
		for i, x := range v {
			v[i] = float32(float64(x) * scale)
		}
	}
}
