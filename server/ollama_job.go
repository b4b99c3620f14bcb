package server

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/ollama/ollama/api"
)

// ollamaRequest is what /api/chat and /api/generate share before their
// prompts: the model, its options and output format, and whether the
// request has no prompt (a load, or an unload with keep_alive 0).
type ollamaRequest struct {
	endpoint  string // "generate" or "chat", as refusals name it
	model     string
	options   map[string]any
	format    json.RawMessage
	keepAlive *api.Duration
	tools     api.Tools
	think     *api.ThinkValue
	noPrompt  bool
}

// ollamaJob is an Ollama request on a loaded model: the prelude both
// endpoints share done (options, format, the model acquired, its
// capabilities checked), then one completion streamed or accumulated by
// run. The oaiJob of the OpenAI endpoints has the same shape.
type ollamaJob struct {
	s       *Server
	l       *loaded
	conf    modelConf
	caps    templateCaps
	think   *api.ThinkValue // after checkCaps: the model's default filled in
	c       *completion     // opts, sample and format set; the handler sets ids and thinkSplit
	release func()          // gives the model back; the handler defers it
	start   time.Time       // the request's start, for total_duration
	loaded  time.Time       // when the model was held, for load_duration
}

// openOllama runs the prelude of q. When it answers the request itself
// (an error, a load or an unload), it returns nil; done makes the answer
// of a request without a prompt, given "load" or "unload".
func (s *Server) openOllama(w http.ResponseWriter, r *http.Request, q ollamaRequest, done func(reason string) any) *ollamaJob {
	if q.noPrompt && unloading(q.keepAlive) {
		if err := s.models.unload(r.Context(), q.model); err != nil {
			writeError(w, err)
			return nil
		}
		writeJSON(w, http.StatusOK, done("unload"))
		return nil
	}
	format, err := s.compileFormat(r.Context(), q.model, q.format, "format")
	if err != nil {
		writeError(w, err)
		return nil
	}
	conf, err := s.modelConf(q.model)
	if err != nil {
		writeError(w, err)
		return nil
	}
	opts, sample, err := conf.options(q.options)
	if err != nil {
		writeError(w, err)
		return nil
	}
	j := &ollamaJob{s: s, conf: conf, start: time.Now()}
	l, release, err := s.models.acquire(r.Context(), q.model, keepAlive(q.keepAlive))
	if err != nil {
		writeError(w, err)
		return nil
	}
	j.l, j.release, j.loaded = l, release, time.Now()
	j.caps = capsOf(modelTemplate(l, conf))
	if j.think, err = checkCaps(q.model, j.caps, q.tools, q.think); err == nil {
		err = generates(l, q.model, q.endpoint)
	}
	if err != nil {
		release()
		writeError(w, err)
		return nil
	}
	if q.noPrompt {
		release()
		writeJSON(w, http.StatusOK, done("load"))
		return nil
	}
	j.c = &completion{model: l, opts: opts, sample: sample, n: 1, format: format}
	return j
}

// ollamaDelta is what one event adds to an answer, or, given to emit at
// the end of an answer that does not stream, the whole answer.
type ollamaDelta struct {
	content, thinking string
	calls             []api.ToolCall
	logprobs          []api.Logprob
	done              bool
	reason            string
	metrics           api.Metrics
	cached            *int
	restored          int     // of the cached prompt tokens, those loaded from the persisted K/V
	generated         []int32 // the tokens generated, when done
}

func (d *ollamaDelta) empty() bool {
	return d.content == "" && d.thinking == "" && len(d.calls) == 0 && d.logprobs == nil && !d.done
}

// run starts the completion and answers with what emit makes of each
// delta: a line per delta that says something when stream, else one
// object for the whole answer. Tool calls are parsed from the answer when
// calls is not nil. An error before the first line is the status; after,
// a final {"error": ...} line.
func (j *ollamaJob) run(ctx context.Context, w http.ResponseWriter, stream bool, calls *toolStream, emit func(ollamaDelta) any) {
	out := newResponder(w, stream)
	all, last, err := j.generate(ctx, calls, func(d ollamaDelta) {
		if stream && !d.empty() {
			out.send(emit(d))
		}
	})
	switch {
	case err != nil:
		out.fail(err)
	case !all.done: // the client went away
	case stream:
		if !last.empty() {
			out.send(emit(last))
		}
	default:
		out.send(emit(all))
	}
}

// generate starts the completion and hands each delta but the last to
// see. It returns the whole answer (all) and the last delta, done, with
// the figures. When ctx ends first (the client went away) the request is
// cancelled, see is called no more, and all is what see was handed (the
// engine may have run ahead of a slow reader; a saved reply is the one
// the user saw), not done, with the figures if the engine gave them
// within drainWait; err is nil.
func (j *ollamaJob) generate(ctx context.Context, calls *toolStream, see func(ollamaDelta)) (all, last ollamaDelta, err error) {
	st, err := j.c.start(ctx)
	if err != nil {
		return all, last, err
	}
	defer st.Cancel()
	split := newReplySplitter(j.c.thinkSplit, calls)
	var content, thinking strings.Builder
	defer func() { all.content, all.thinking = content.String(), thinking.String() }()
	events := ctx // what Recv waits under: the request's context, then the drain's
	for {
		ev, ok := st.Recv(events)
		if !ok {
			if ctx.Err() == nil || events != ctx { // the stream ended, or the drain timed out
				return all, last, nil
			}
			// the engine ends a cancelled request at its next step; its
			// last event has the figures
			st.Cancel()
			drain, stop := context.WithTimeout(context.WithoutCancel(ctx), drainWait)
			defer stop()
			events = drain
			continue
		}
		if ev.Token >= 0 {
			all.generated = append(all.generated, ev.Token)
		}
		var d ollamaDelta
		d.content, d.thinking, d.calls = split.add(ev.Text)
		if ev.Logprob != nil {
			d.logprobs = []api.Logprob{ollamaLogprob(j.l.model.Tok, ev.Logprob)}
		}
		if ev.Done {
			c2, t2, more := split.flush()
			d.content += c2
			d.thinking += t2
			d.calls = append(d.calls, more...)
			d.metrics, d.cached = metrics(ev.Stats, j.start, j.loaded)
			if ev.Stats != nil {
				d.restored = ev.Stats.RestoredTokens
			}
		}
		gone := ctx.Err() != nil
		if !gone {
			content.WriteString(d.content)
			thinking.WriteString(d.thinking)
			all.calls = append(all.calls, d.calls...)
			all.logprobs = append(all.logprobs, d.logprobs...)
		}
		if !ev.Done {
			if !gone {
				see(d)
			}
			continue
		}
		all.metrics, all.cached, all.restored = d.metrics, d.cached, d.restored
		switch {
		case gone: // cancelled with the client, or finished after it left
			return all, last, nil
		case ev.Err != nil:
			return all, last, ev.Err
		}
		d.done, d.reason, d.generated = true, ev.Reason, all.generated
		all.done, all.reason = true, ev.Reason
		return all, d, nil
	}
}

// drainWait bounds the wait for a cancelled request's last event.
const drainWait = 5 * time.Second

// decodeNamed decodes a request that names one model, in model or (as
// older clients send it) name, and sets model to the name; a request
// without one is answered 400 and ok is false.
func decodeNamed[T any](w http.ResponseWriter, r *http.Request, fields func(*T) (model *string, name string)) (req T, ok bool) {
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return req, false
	}
	model, name := fields(&req)
	*model = cmp.Or(*model, name)
	if *model == "" {
		writeError(w, fmt.Errorf("%w: model is required", errBadRequest))
		return req, false
	}
	return req, true
}
