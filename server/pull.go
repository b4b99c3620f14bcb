package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/ollama/ollama/api"

	"folio/installer"
	"folio/models/gotemplate"
)

// The installer's endpoints: /api/pull, /api/create and /api/push
// (push.go) stream Ollama's progress (NDJSON) while installer.Pull,
// Create and Push run; /api/blobs/{digest} receives the blobs a create
// names.

func (s *Server) installRoutes() {
	m := s.mux
	m.HandleFunc("POST /api/pull", s.pull)
	m.HandleFunc("POST /api/create", s.create)
	m.HandleFunc("HEAD /api/blobs/{digest}", s.headBlob)
	m.HandleFunc("POST /api/blobs/{digest}", s.postBlob)
	m.HandleFunc("POST /api/push", s.push)
}

// unlimitedBody: a blob upload is as large as the model it carries; its
// digest, not a size limit, decides whether it is kept.
func unlimitedBody(r *http.Request) bool {
	return r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/api/blobs/")
}

// installOptions are the server's installer options, or 501 when the
// server has no home directory to install into.
func (s *Server) installOptions(w http.ResponseWriter) (installer.Options, bool) {
	if s.cfg.Install == nil {
		writeError(w, fmt.Errorf("%w: the installer has no FOLIO_HOME to put models in on this server (folio serve sets one)", errNotImplemented))
		return installer.Options{}, false
	}
	return *s.cfg.Install, true
}

// installErr gives installer errors their HTTP status: a model the
// registry does not have is 404 and a registry that fails 502, each with
// the installer's words (Ollama's for a missing manifest).
func installErr(err error) error {
	switch {
	case errors.Is(err, installer.ErrNotFound):
		return statusAs{err, ErrModelNotFound}
	case errors.Is(err, installer.ErrRegistry):
		return statusAs{err, errUpstream}
	case errors.Is(err, installer.ErrName), errors.Is(err, installer.ErrDigest), errors.Is(err, installer.ErrModelfile),
		errors.Is(err, installer.ErrTemplate):
		return fmt.Errorf("%w: %w", errBadRequest, err)
	}
	var ue *url.Error
	if errors.As(err, &ue) && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("%w: %w", errUpstream, err)
	}
	return err
}

// statusAs is err with the status statusOf gives kind, and err's message.
type statusAs struct{ err, kind error }

func (e statusAs) Error() string   { return e.err.Error() }
func (e statusAs) Unwrap() []error { return []error{e.err, e.kind} }

// progressStream writes progress messages as NDJSON when stream is true;
// otherwise only the final answer is written.
type progressStream struct {
	w      http.ResponseWriter
	enc    *json.Encoder
	stream bool
}

func newProgressStream(w http.ResponseWriter, stream *bool) *progressStream {
	p := &progressStream{w: w, enc: json.NewEncoder(w), stream: stream == nil || *stream}
	if p.stream {
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusOK)
	}
	return p
}

func (p *progressStream) progress(pr installer.Progress) {
	if !p.stream {
		return
	}
	p.enc.Encode(api.ProgressResponse{Status: pr.Status, Digest: pr.Digest, Total: pr.Total, Completed: pr.Completed})
	if f, ok := p.w.(http.Flusher); ok {
		f.Flush()
	}
}

// end writes the outcome: an error line in a stream (status 200 is sent
// already), else the error's status, or {"status":"success"} unstreamed.
func (p *progressStream) end(err error) {
	switch {
	case err != nil && p.stream:
		p.enc.Encode(map[string]string{"error": err.Error()})
	case err != nil:
		writeError(p.w, installErr(err))
	case !p.stream:
		writeJSON(p.w, http.StatusOK, api.ProgressResponse{Status: "success"})
	}
}

func (s *Server) pull(w http.ResponseWriter, r *http.Request) {
	req, ok := decodeNamed(w, r, func(q *api.PullRequest) (*string, string) { return &q.Model, q.Name })
	if !ok {
		return
	}
	if _, err := installer.ParseName(req.Model); err != nil { // refused before the stream's 200
		writeError(w, installErr(err))
		return
	}
	opt, ok := s.installOptions(w)
	if !ok {
		return
	}
	opt.Insecure = req.Insecure
	ps := newProgressStream(w, req.Stream)
	opt.Progress = ps.progress
	_, err := installer.Pull(r.Context(), req.Model, opt)
	ps.end(err)
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	var req api.CreateRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.Model == "" {
		req.Model = req.Name
	}
	cr := installer.CreateRequest{Name: req.Model, From: req.From, Files: req.Files, Template: req.Template,
		System: req.System, Parameters: req.Parameters, Messages: req.Messages}
	switch l := req.License.(type) {
	case string:
		cr.License = []string{l}
	case []any:
		for _, v := range l {
			if s, ok := v.(string); ok {
				cr.License = append(cr.License, s)
			}
		}
	}
	var why string
	switch {
	case req.Model == "":
		why = "model is required"
	case req.Quantize != "" || req.Quantization != "":
		why = "quantize: folio does not quantize models yet; create from a GGUF file of the type you want"
	case len(req.Adapters) > 0:
		why = "adapters: folio does not apply LoRA adapters yet"
	case looksLikePath(req.From):
		why = fmt.Sprintf("from %q is a file path: over the API a model is created from a model name or from files "+
			"uploaded to /api/blobs (folio create -f Modelfile uploads a FROM file)", req.From)
	}
	if why != "" {
		writeError(w, fmt.Errorf("%w: %s", errBadRequest, why))
		return
	}
	if err := checkCreateNames(cr); err != nil { // refused before the stream's 200
		writeError(w, installErr(err))
		return
	}
	opt, ok := s.installOptions(w)
	if !ok {
		return
	}
	ps := newProgressStream(w, req.Stream)
	opt.Progress = ps.progress
	_, err := installer.Create(r.Context(), cr, opt)
	ps.end(err)
}

func (s *Server) headBlob(w http.ResponseWriter, r *http.Request) {
	d := r.PathValue("digest")
	if err := installer.CheckDigest(d); err != nil {
		writeError(w, installErr(err))
		return
	}
	opt, ok := s.installOptions(w)
	if !ok {
		return
	}
	if !installer.HasBlob(opt.Home, d) {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (s *Server) postBlob(w http.ResponseWriter, r *http.Request) {
	opt, ok := s.installOptions(w)
	if !ok {
		return
	}
	if err := installer.ImportBlob(r.PathValue("digest"), r.Body, opt); err != nil {
		writeError(w, installErr(err))
		return
	}
	w.WriteHeader(http.StatusCreated)
}

// checkCreateNames checks the new model's name, the digests of files,
// which become paths under the home, and its template before anything is
// streamed.
func checkCreateNames(cr installer.CreateRequest) error {
	if _, err := installer.ParseName(cr.Name); err != nil {
		return err
	}
	if err := gotemplate.Check(cr.Template); err != nil {
		return fmt.Errorf("%w: %w", installer.ErrTemplate, err)
	}
	for name, d := range cr.Files {
		if err := installer.CheckDigest(d); err != nil {
			return fmt.Errorf("files: %s: %w", name, err)
		}
	}
	return nil
}
