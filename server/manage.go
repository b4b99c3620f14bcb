package server

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/types/model"

	"folio/installer"
	"folio/models/arch"
	"folio/models/gguf"
	"folio/models/tokenizer"
)

func (s *Server) tags(w http.ResponseWriter, r *http.Request) {
	list, err := s.runnable()
	if err != nil {
		writeError(w, err)
		return
	}
	resp := api.ListResponse{Models: []api.ListModelResponse{}}
	for _, m := range list {
		resp.Models = append(resp.Models, api.ListModelResponse{Name: m.Name, Model: m.Name, ModifiedAt: m.Modified,
			Size: m.Size, Digest: m.Digest, Details: m.details})
	}
	writeJSON(w, http.StatusOK, resp)
}

// listedModel is a model /api/tags and /v1/models list, with its details.
type listedModel struct {
	ModelEntry
	details api.ModelDetails
}

// runnable lists the models of the registry that folio can run. As Ollama
// lists only models it runs, a GGUF file that cannot run (a vocab-only
// file, an architecture folio does not support, a header that does not
// read) is left out; a request that names it still gets the reason.
func (s *Server) runnable() ([]listedModel, error) {
	list, err := s.cfg.Registry.List()
	if err != nil {
		return nil, err
	}
	var out []listedModel
	for _, e := range list {
		f, err := gguf.Open(e.Path)
		if err != nil {
			continue
		}
		if _, err := arch.ReadConfig(f); err == nil {
			out = append(out, listedModel{e, detailsOf(f)})
		}
		f.Close()
	}
	return out, nil
}

// details reads a model's headline facts from its header (no weights).
func details(path string) api.ModelDetails {
	f, err := gguf.Open(path)
	if err != nil {
		return api.ModelDetails{Format: "gguf"}
	}
	defer f.Close()
	return detailsOf(f)
}

func detailsOf(f *gguf.File) api.ModelDetails {
	sum := f.Summary()
	return api.ModelDetails{Format: "gguf", Family: sum.Architecture, Families: []string{sum.Architecture},
		ParameterSize: gguf.ParamSize(sum.Parameters), QuantizationLevel: sum.Quantization}
}

// embedsOnly reports whether f is a model made for embeddings: an encoder
// architecture (bert, nomic-bert, gemma-embedding) or a file with an
// {arch}.pooling_type key (a generative architecture trained to embed,
// such as Qwen3-Embedding). It has no completion capability: generation
// requests are refused as Ollama refuses them.
func embedsOnly(f *gguf.File) bool {
	a := f.String("general.architecture")
	_, pooled := f.Get(a + ".pooling_type")
	return pooled || arch.IsEncoder(a)
}

// capabilities are what a model can do, as Ollama's /api/show names them:
// embedding for a model made for embeddings (embedsOnly), completion for
// the others; insert with fill-in-the-middle tokens or a template that
// uses .Suffix; tools and thinking from its template.
func capabilities(f *gguf.File, template string) []model.Capability {
	var caps []model.Capability
	if embedsOnly(f) {
		caps = append(caps, model.CapabilityEmbedding)
	} else {
		caps = append(caps, model.CapabilityCompletion)
	}
	if v, _ := tokenizer.LoadVocab(f); canInsert(template, v) { // v is nil for a file without a usable vocabulary
		caps = append(caps, model.CapabilityInsert)
	}
	tc := capsOf(template)
	if tc.tools {
		caps = append(caps, model.CapabilityTools)
	}
	if tc.thinks() {
		caps = append(caps, model.CapabilityThinking)
	}
	return caps
}

func (s *Server) show(w http.ResponseWriter, r *http.Request) {
	req, ok := decodeNamed(w, r, func(q *api.ShowRequest) (*string, string) { return &q.Model, q.Name })
	if !ok {
		return
	}
	ent, err := resolveModel(r.Context(), &s.cfg, req.Model)
	if err != nil {
		writeError(w, err)
		return
	}
	f, err := gguf.Open(ent.Path)
	if err != nil {
		writeError(w, err)
		return
	}
	defer f.Close()
	info := map[string]any{}
	for _, kv := range f.KV {
		if strings.HasPrefix(kv.Key, "tokenizer.ggml.") && !req.Verbose {
			if arr, ok := kv.Value.(gguf.Array); ok && arr.Len() > 16 {
				info[kv.Key] = nil // as Ollama: long arrays only with verbose
				continue
			}
		}
		info[kv.Key] = gguf.JSONValue(kv.Value, 0)
	}
	resp := api.ShowResponse{
		Template:   f.String("tokenizer.chat_template"),
		Details:    details(ent.Path),
		ModelInfo:  info,
		ModifiedAt: ent.Modified,
	}
	conf, err := s.modelConf(req.Model)
	if err != nil {
		writeError(w, err)
		return
	}
	conf.show(&resp, ent)
	resp.Capabilities = capabilities(f, resp.Template)
	if req.Verbose {
		for _, t := range f.Tensors {
			resp.Tensors = append(resp.Tensors, api.Tensor{Name: t.Name, Type: t.Type.String(), Shape: t.Shape})
		}
	}
	writeJSON(w, http.StatusOK, resp)
}

// psModel is Ollama's /api/ps entry plus the prefix tokens folio keeps for
// the model, in memory and on disk.
type psModel struct {
	api.ProcessModelResponse
	CachedTokens int   `json:"cached_tokens"`
	StoredTokens int64 `json:"stored_tokens"`
}

func (s *Server) ps(w http.ResponseWriter, r *http.Request) {
	resp := struct {
		Models []psModel `json:"models"`
	}{Models: []psModel{}}
	for _, l := range s.models.running() {
		spec := l.model.KV.Spec()
		p := psModel{ProcessModelResponse: api.ProcessModelResponse{Name: l.entry.Name, Model: l.entry.Name,
			Size: l.model.Bytes.Total(), Digest: l.entry.Digest, Details: details(l.entry.Path),
			ExpiresAt: s.models.expiry(l), ContextLength: min(l.model.Opt.NumCtx, spec.Tokens())},
			CachedTokens: l.engine.CachedTokens()}
		if fp := l.engine.Fingerprint(); fp != "" && s.cfg.Store != nil {
			p.StoredTokens = s.cfg.Store.KVStats(fp).Tokens
		}
		resp.Models = append(resp.Models, p)
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) deleteModel(w http.ResponseWriter, r *http.Request) {
	req, ok := decodeNamed(w, r, func(q *api.DeleteRequest) (*string, string) { return &q.Model, q.Name })
	if !ok {
		return
	}
	if _, err := checkModelName(r.Context(), &s.cfg, req.Model); err != nil {
		writeError(w, err)
		return
	}
	s.models.unload(r.Context(), req.Model)
	if err := s.cfg.Registry.Delete(req.Model); err != nil {
		if errors.Is(err, ErrModelNotFound) {
			err = notFound(req.Model)
		}
		writeError(w, err)
		return
	}
	if s.cfg.Install != nil { // as ollama rm: the layers no other model uses go too
		if n, err := s.cfg.Install.Prune(); err != nil {
			s.cfg.Log.Warn("pruning unused blobs after a delete failed; the next pull or delete retries", "model", req.Model, "err", err)
		} else if n > 0 {
			s.cfg.Log.Info("removed unused blobs", "model", req.Model, "blobs", n)
		}
	}
	w.WriteHeader(http.StatusOK)
}

// copyModel gives a model another name, under the rules of pull and
// create: the destination is a model name, the weights open as GGUF, and
// the source is found as any request's model (paths.go).
func (s *Server) copyModel(w http.ResponseWriter, r *http.Request) {
	var req api.CopyRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.Source == "" || req.Destination == "" {
		writeError(w, fmt.Errorf("%w: source and destination are required", errBadRequest))
		return
	}
	dst, err := installer.ParseName(req.Destination)
	if err != nil {
		writeError(w, fmt.Errorf("%w: destination name: %w", errBadRequest, err))
		return
	}
	src, err := resolveModel(r.Context(), &s.cfg, req.Source)
	if err != nil {
		writeError(w, err)
		return
	}
	if s.cfg.Install != nil {
		_, err = installer.Copy(installer.CopySource{Name: src.Name, Path: src.Path, Digest: "sha256:" + src.Digest, Size: src.Size},
			dst.String(), *s.cfg.Install)
		if err != nil {
			writeError(w, installErr(err))
			return
		}
		w.WriteHeader(http.StatusOK)
		return
	}
	f, err := gguf.Open(src.Path)
	if err != nil {
		writeError(w, fmt.Errorf("%s: the model is not a usable GGUF file: %w", req.Source, err))
		return
	}
	f.Close()
	if err := s.cfg.Registry.Copy(src, dst.String()); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}
