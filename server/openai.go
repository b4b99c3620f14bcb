package server

// openAIRoutes registers the OpenAI-compatible endpoints (/v1/*).
func (s *Server) openAIRoutes() {}
