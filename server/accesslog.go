package server

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"time"
)

// The access log is one info line per request through the server's
// logger, as Ollama's gin logger writes one: method, path, status,
// duration, client and, when the request's JSON named one, the model.
// The model is noted where the handler decodes the body (decode calls
// noteModel), so the body is read once.

// maxLoggedModel bounds the model name in a log line: a name is the
// client's text.
const maxLoggedModel = 200

// accessNote is what a handler tells the access log about its request.
// The handler runs on the goroutine of logAccess's caller, which reads
// the note after it returns: no lock.
type accessNote struct {
	model string
}

type accessNoteKey struct{}

// logAccess starts a request's access log line: it returns the writer
// and request the handlers get, and done, which writes the line.
func (s *Server) logAccess(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, *http.Request, func()) {
	start := time.Now()
	note := &accessNote{}
	rec := &statusRecorder{ResponseWriter: w}
	r = r.WithContext(context.WithValue(r.Context(), accessNoteKey{}, note))
	return rec, r, func() {
		status := rec.status
		if status == 0 { // nothing written: net/http sends 200
			status = http.StatusOK
		}
		args := []any{"method", r.Method, "path", r.URL.Path, "status", status, "duration", time.Since(start),
			"client", r.RemoteAddr}
		if note.model != "" {
			args = append(args, "model", note.model)
		}
		s.cfg.Log.Info("request", args...)
	}
}

// noteModel records the model a decoded request body v names (its Model
// field, else Name, Ollama's older spelling) for the access log.
func noteModel(r *http.Request, v any) {
	note, ok := r.Context().Value(accessNoteKey{}).(*accessNote)
	if !ok {
		return
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return
	}
	for _, name := range []string{"Model", "Name"} {
		if f := rv.Elem().FieldByName(name); f.IsValid() && f.Kind() == reflect.String && f.String() != "" {
			note.model = f.String()
			if len(note.model) > maxLoggedModel {
				note.model = strings.ToValidUTF8(note.model[:maxLoggedModel], "") + "…"
			}
			return
		}
	}
}

// statusRecorder keeps the status a handler sends. Flush and Unwrap keep
// streaming and http.ResponseController working through it.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (w *statusRecorder) WriteHeader(code int) {
	if w.status == 0 && code >= 200 { // informational headers (1xx) precede the status
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusRecorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusRecorder) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }
