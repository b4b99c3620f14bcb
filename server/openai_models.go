package server

import "net/http"

// oaiModel is OpenAI's model object.
type oaiModel struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

func modelObject(e ModelEntry) oaiModel {
	return oaiModel{ID: e.Name, Object: "model", Created: e.Modified.Unix(), OwnedBy: "library"}
}

func (s *Server) oaiModels(w http.ResponseWriter, r *http.Request) {
	list, err := s.runnable()
	if err != nil {
		writeOAIError(w, err)
		return
	}
	data := []oaiModel{}
	for _, m := range list {
		data = append(data, modelObject(m.ModelEntry))
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

func (s *Server) oaiModel(w http.ResponseWriter, r *http.Request) {
	e, err := resolveModel(r.Context(), &s.cfg, r.PathValue("model"))
	if err != nil {
		writeOAIError(w, &paramError{"model", err})
		return
	}
	writeJSON(w, http.StatusOK, modelObject(e))
}
