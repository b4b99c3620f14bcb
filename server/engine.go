package server

import (
	"context"

	"folio/runner"
)

// Engine returns the engine of the loaded model that name resolves to, or
// nil when that model is not loaded. It is for in-process inspection (the
// soak bench reads the block pool through it); requests go through the
// HTTP API.
func (s *Server) Engine(name string) *runner.Engine {
	ent, err := s.cfg.Registry.Resolve(context.Background(), name)
	if err != nil {
		return nil
	}
	s.models.mu.Lock()
	defer s.models.mu.Unlock()
	if l, ok := s.models.loaded[ent.Path]; ok {
		return l.engine
	}
	return nil
}
