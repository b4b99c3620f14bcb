package server

import (
	"fmt"

	"github.com/ollama/ollama/api"
)

// renderTemplate renders a model's Jinja chat template.
func renderTemplate(l *loaded, tmpl string, msgs []api.Message, tools api.Tools, think *api.ThinkValue) (string, error) {
	return "", fmt.Errorf("%w: %s has a Jinja chat template and folio's renderer is not wired in yet: use /api/generate with raw: true",
		errNotImplemented, l.entry.Name)
}
