package server

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
)

// oaiEmbedRequest is POST /v1/embeddings.
type oaiEmbedRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"` // "float" (default) or "base64"
	Dimensions     *int            `json:"dimensions"`
	User           string          `json:"user"` // ignored
}

type oaiEmbedding struct {
	Object    string `json:"object"`
	Embedding any    `json:"embedding"` // []float32, or base64 of little-endian float32s
	Index     int    `json:"index"`
}

func (q *oaiEmbedRequest) check() ([]oaiInput, int, error) {
	dims := 0
	switch {
	case q.Model == "":
		return nil, 0, badParam("model", "model is required")
	case len(q.Input) == 0 || string(q.Input) == "null":
		return nil, 0, badParam("input", "input is required")
	case q.EncodingFormat != "" && q.EncodingFormat != "float" && q.EncodingFormat != "base64":
		return nil, 0, badParam("encoding_format", "encoding_format %q: use float or base64", q.EncodingFormat)
	case q.Dimensions != nil && *q.Dimensions < 1:
		return nil, 0, badParam("dimensions", "dimensions %d: use a positive count", *q.Dimensions)
	case q.Dimensions != nil:
		dims = *q.Dimensions
	}
	inputs, err := parseInputs(q.Input, "input")
	if err != nil {
		return nil, 0, err
	}
	for _, in := range inputs {
		if !in.tokens && in.text == "" || in.tokens && len(in.ids) == 0 {
			return nil, 0, badParam("input", "an input is empty: send text or token ids to embed")
		}
	}
	return inputs, dims, nil
}

func (s *Server) oaiEmbeddings(w http.ResponseWriter, r *http.Request) {
	var req oaiEmbedRequest
	var inputs []oaiInput
	var dims int
	l, release, ok := s.begin(w, r, &req, func() (err error) {
		inputs, dims, err = req.check()
		return err
	}, &req.Model)
	if !ok {
		return
	}
	defer release()
	data := []oaiEmbedding{}
	tokens := 0
	for i, in := range inputs {
		ids := in.ids
		if !in.tokens {
			ids = encodePrompt(l.model.Tok, in.text, false)
		}
		v, n, err := embedIDs(r.Context(), l, ids, true, dims)
		if err != nil {
			writeOAIError(w, err)
			return
		}
		tokens += n
		e := oaiEmbedding{Object: "embedding", Embedding: v, Index: i}
		if req.EncodingFormat == "base64" {
			e.Embedding = base64Floats(v)
		}
		data = append(data, e)
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data, "model": req.Model,
		"usage": map[string]int{"prompt_tokens": tokens, "total_tokens": tokens}})
}

// base64Floats is OpenAI's base64 encoding of an embedding: the float32
// values little-endian, base64 (the openai npm client asks for it).
func base64Floats(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}
