package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strings"
	"time"

	"github.com/ollama/ollama/api"

	"folio/gpu"
	"folio/installer"
	"folio/models"
	"folio/models/arch"
	"folio/models/gguf"
	"folio/models/tokenizer"
	"folio/runner"
	"folio/server/web"
	"folio/store"
)

// APIVersion is the Ollama API version folio answers to, for clients that
// check it before using a feature.
const APIVersion = "0.17.4"

// Config is what a server needs. The zero value of each field but Registry
// gives the default.
type Config struct {
	Registry      Registry
	Store         *store.KVStore     // persists prefix K/V across restarts; nil: memory only
	Conversations *store.Registry    // folio.db, where /api/folio/… keeps the chat page's conversations; nil: 501
	Version       string             // folio's version, for /api/version
	Load          runner.LoadOptions // how models are loaded
	KeepAlive     time.Duration      // default keep_alive; 0: 5 minutes
	MaxLoaded     int                // models loaded at once; default 3
	MaxQueue      int                // requests waiting per model, and for a model to unload, before 503; 0: no limit
	MaxBodyBytes  int64              // request body limit but for blob uploads; default 32 MiB (FOLIO_MAX_BODY)
	Origins       []string           // browser origins allowed beyond localhost and app schemes (FOLIO_ORIGINS); "*": all
	Log           *slog.Logger
	Now           func() time.Time // for tests; default time.Now
	LoadModelHook func(ModelEntry) // called before a model loads (tests)
	// Home is FOLIO_HOME, whose manifests give models their template,
	// system prompt, messages and parameters; "": Install's home, if any.
	Home string
	// BodyTimeout and BodyMinBytes pace request bodies: each BodyTimeout
	// (default 30 s) must bring BodyMinBytes (default 64 KiB) of a body,
	// or its end, else 408 and the connection is closed (conns.go).
	BodyTimeout  time.Duration
	BodyMinBytes int64
	// Install is where /api/pull, /api/create and /api/blobs put models
	// (home, registry, download settings); nil: they answer 501.
	Install *installer.Options
	// KVTypeFallback loads a model with an F16 K/V cache, and a warning,
	// when it (or the device) cannot take Load.KVType's, as Ollama's
	// OLLAMA_KV_CACHE_TYPE does: serve's FOLIO_KV_CACHE_TYPE is for every
	// model. Off, such a load fails (folio run's explicit --kv-type).
	KVTypeFallback bool
}

// Server serves the Ollama and OpenAI APIs over a set of models.
type Server struct {
	cfg     Config
	mux     *http.ServeMux
	models  *manager
	origins origins
	turns   turns // the conversations replying now (folio_chat.go)
}

// New returns the server's handler.
func New(cfg Config) *Server {
	if cfg.KeepAlive == 0 {
		cfg.KeepAlive = 5 * time.Minute
	}
	if cfg.MaxLoaded <= 0 {
		cfg.MaxLoaded = 3
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 32 << 20
	}
	if cfg.BodyTimeout <= 0 {
		cfg.BodyTimeout = defaultBodyTimeout
	}
	if cfg.BodyMinBytes <= 0 {
		cfg.BodyMinBytes = defaultBodyMinBytes
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux(), origins: newOrigins(cfg.Origins)}
	s.models = newManager(&s.cfg)
	s.routes()
	return s
}

// ServeHTTP makes Server an http.Handler. Every request passes the guard
// (guard.go: Host, Origin, body size) first, and is logged (accesslog.go).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w, r, logged := s.logAccess(w, r)
	defer logged()
	r, ok := s.guard(w, r)
	if !ok {
		return
	}
	if h, _ := s.mux.Handler(r); reflect.TypeOf(h) == redirectType {
		redirect(w, r, h)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// redirectType is the type of the handler ServeMux picks for a path it
// redirects: an unclean path (//api/tags, /api/../api/tags) or a subtree
// named without its slash (/v1).
var redirectType = reflect.TypeOf(http.RedirectHandler("/", http.StatusTemporaryRedirect))

// redirect answers with the status and Location of ServeMux's redirect h
// and, in place of its HTML, a JSON body in the error format of the API
// the redirect leads to.
func redirect(w http.ResponseWriter, r *http.Request, h http.Handler) {
	rec := headerRecorder{header: http.Header{}}
	h.ServeHTTP(&rec, r)
	loc := rec.header.Get("Location")
	w.Header().Set("Location", loc)
	msg := fmt.Sprintf("%s %s is served at %s: request that path", r.Method, r.URL.Path, loc)
	if strings.HasPrefix(loc, "/v1/") {
		writeJSON(w, rec.status, map[string]oaiError{"error": {Message: msg, Type: "invalid_request_error"}})
		return
	}
	writeJSON(w, rec.status, map[string]string{"error": msg})
}

// headerRecorder keeps the status and headers a handler writes and drops
// its body.
type headerRecorder struct {
	header http.Header
	status int
}

func (h *headerRecorder) Header() http.Header         { return h.header }
func (h *headerRecorder) WriteHeader(status int)      { h.status = status }
func (h *headerRecorder) Write(p []byte) (int, error) { return len(p), nil }

// Close unloads every model.
func (s *Server) Close() { s.models.closeAll() }

func (s *Server) routes() {
	m := s.mux
	m.HandleFunc("GET /{$}", s.root)
	m.HandleFunc("HEAD /{$}", s.root)
	m.Handle("GET /ui/", web.Assets()) // the chat page's files; the page itself is root's
	m.HandleFunc("GET /api/version", s.version)
	m.HandleFunc("HEAD /api/version", s.version)
	m.HandleFunc("POST /api/generate", s.generate)
	m.HandleFunc("POST /api/chat", s.chat)
	m.HandleFunc("POST /api/embed", s.embed)
	m.HandleFunc("POST /api/embeddings", s.embeddings)
	m.HandleFunc("GET /api/tags", s.tags)
	m.HandleFunc("HEAD /api/tags", s.tags)
	m.HandleFunc("POST /api/show", s.show)
	m.HandleFunc("GET /api/ps", s.ps)
	m.HandleFunc("DELETE /api/delete", s.deleteModel)
	m.HandleFunc("POST /api/copy", s.copyModel)
	m.Handle("GET /metrics", s.models.metrics.handler())
	s.installRoutes() // pull, create, push, blobs (pull.go)
	s.anthropicRoutes()
	s.openAIRoutes()
	s.folioRoutes() // the chat page's conversations (folio_conversations.go)
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, fmt.Errorf("%w: %s %s", errNotFoundPath, r.Method, r.URL.Path))
	})
}

// root answers Ollama's words exactly, as clients probe for them (many
// compare the whole body); the Server header says it is folio. A browser
// (Accept: text/html) gets the chat page instead (server/web).
func (s *Server) root(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Server", strings.TrimSuffix("folio/"+s.cfg.Version, "/"))
	w.Header().Add("Vary", "Accept")
	if web.WantsPage(r) {
		web.ServePage(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if r.Method == http.MethodHead {
		return
	}
	io.WriteString(w, "Ollama is running")
}

func (s *Server) version(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"version": APIVersion, "folio_version": s.cfg.Version})
}

var (
	errBadRequest     = errors.New("bad request")
	errNotImplemented = errors.New("not implemented yet")
	errNotFoundPath   = errors.New("no such endpoint")
	errUpstream       = errors.New("the registry could not be reached")
)

// statusOf maps an error to its HTTP status: the one place that decides.
func statusOf(err error) int {
	var maxBytes *http.MaxBytesError
	var syntax *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &maxBytes):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, errSlowBody):
		return http.StatusRequestTimeout
	case errors.Is(err, errForbidden):
		return http.StatusForbidden
	case errors.Is(err, ErrModelNotFound), errors.Is(err, models.ErrNotFound), errors.Is(err, errNotFoundPath),
		errors.Is(err, store.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, errBadRequest), errors.Is(err, runner.ErrRequest), errors.As(err, &syntax),
		errors.As(err, &typeErr), errors.Is(err, io.ErrUnexpectedEOF):
		return http.StatusBadRequest
	case errors.Is(err, runner.ErrBusy):
		return http.StatusServiceUnavailable
	case errors.Is(err, errNotImplemented):
		return http.StatusNotImplemented
	case errors.Is(err, errUpstream):
		return http.StatusBadGateway
	case errors.Is(err, runner.ErrNoMemory), errors.Is(err, gpu.ErrOutOfMemory), errors.Is(err, installer.ErrDiskFull):
		return http.StatusInsufficientStorage
	case errors.Is(err, arch.ErrModel), errors.Is(err, gguf.ErrFormat), errors.Is(err, tokenizer.ErrVocab):
		return http.StatusUnprocessableEntity
	case errors.Is(err, context.Canceled), errors.Is(err, runner.ErrClosed):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// writeError sends Ollama's error JSON.
func writeError(w http.ResponseWriter, err error) {
	writeJSON(w, statusOf(err), map[string]string{"error": err.Error()})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// decode reads a JSON request body into v.
func decode(r *http.Request, v any) error {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		return bodyErr(err)
	}
	if len(data) == 0 {
		return fmt.Errorf("%w: empty request body: send a JSON object", errBadRequest)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%w: request JSON: %v", errBadRequest, err)
	}
	noteModel(r, v)
	return nil
}

// options turns a request's options over Ollama's defaults into load-time
// and sampling options, refusing values of the wrong type or out of range.
func options(raw map[string]any) (api.Options, runner.SampleOptions, error) {
	o := api.DefaultOptions()
	o.NumCtx = 0
	if err := o.FromMap(raw); err != nil {
		return o, runner.SampleOptions{}, fmt.Errorf("%w: options: %v", errBadRequest, err)
	}
	sample := runner.SampleOptions{
		Temperature: o.Temperature, TopK: o.TopK, TopP: o.TopP, MinP: o.MinP, TypicalP: o.TypicalP,
		RepeatPenalty: 1, RepeatLastN: o.RepeatLastN, PresencePenalty: o.PresencePenalty,
		FrequencyPenalty: o.FrequencyPenalty, Seed: int64(o.Seed),
	}
	// Ollama's engine applies no repeat penalty unless asked; neither do we.
	if _, ok := raw["repeat_penalty"]; ok {
		sample.RepeatPenalty = o.RepeatPenalty
	}
	if err := sample.Check(); err != nil {
		return o, sample, fmt.Errorf("%w: %v", errBadRequest, err)
	}
	switch {
	case o.NumPredict < -2:
		return o, sample, fmt.Errorf("%w: num_predict %d: use -1 (no limit) or a count", errBadRequest, o.NumPredict)
	case o.NumCtx < 0 || (raw["num_ctx"] != nil && o.NumCtx == 0):
		return o, sample, fmt.Errorf("%w: num_ctx %d: use a positive context size", errBadRequest, o.NumCtx)
	}
	return o, sample, nil
}
