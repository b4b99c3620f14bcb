// Package server is folio's HTTP face: the Ollama API (/api/*) and the
// OpenAI API (/v1/*), model lifecycle (load on first use, keep_alive) and
// streaming. server.New returns an http.Handler.
package server
