package server

import (
	"net/http"

	"github.com/ollama/ollama/api"

	"folio/installer"
)

// push sends a registered model to the registry its name names
// (host/namespace/model:tag), streaming Ollama's progress as pull does. A
// name that cannot be pushed to is 400 and a model the server does not
// have 404, before the stream; a registry that fails is 502, or an error
// line once the stream has begun.
func (s *Server) push(w http.ResponseWriter, r *http.Request) {
	req, ok := decodeNamed(w, r, func(q *api.PushRequest) (*string, string) { return &q.Model, q.Name })
	if !ok {
		return
	}
	n, err := installer.PushName(req.Model)
	if err != nil {
		writeError(w, installErr(err))
		return
	}
	opt, ok := s.installOptions(w)
	if !ok {
		return
	}
	// Found as any request's model: a registered file that changed since
	// is refused here, not sent.
	if _, err := resolveModel(r.Context(), &s.cfg, n.String()); err != nil {
		writeError(w, err)
		return
	}
	opt.Insecure = req.Insecure
	ps := newProgressStream(w, req.Stream)
	opt.Progress = ps.progress
	ps.end(installer.Push(r.Context(), n.String(), opt))
}
