package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"

	"github.com/ollama/ollama/api"

	"folio/runner"
)

// openAIRoutes serves the OpenAI API (/v1/*) over the machinery of the
// Ollama API: a request becomes Ollama options (so the same checks
// apply), the model is acquired, the prompt rendered and tokenized as
// /api/chat and /api/generate do, and one engine request per prompt runs
// n samples forked after prefill. Field names and shapes follow OpenAI's
// reference; sampling defaults follow Ollama's OpenAI layer (temperature
// 1, top_p 1, no max_tokens limit; top_k stays Ollama's 40). What folio
// cannot do yet (best_of other than n, echo with logprobs, JSON output;
// stored responses) is refused with a 501 naming the field, never
// ignored. /v1/responses is a chat request underneath
// (openai_responses.go).
func (s *Server) openAIRoutes() {
	m := s.mux
	m.HandleFunc("POST /v1/chat/completions", s.oaiChat)
	m.HandleFunc("POST /v1/completions", s.oaiCompletions)
	m.HandleFunc("POST /v1/embeddings", s.oaiEmbeddings)
	m.HandleFunc("POST /v1/responses", s.oaiResponses)
	m.HandleFunc("GET /v1/models", s.oaiModels)
	m.HandleFunc("GET /v1/models/{model...}", s.oaiModel)
	m.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		writeOAIError(w, fmt.Errorf("%w: %s %s", errNotFoundPath, r.Method, r.URL.Path))
	})
}

// paramError names the request field an error is about; the status still
// comes from the error it wraps (statusOf).
type paramError struct {
	param string
	err   error
}

func (e *paramError) Error() string { return e.err.Error() }
func (e *paramError) Unwrap() error { return e.err }

// badParam is a 400 about one field.
func badParam(param, format string, args ...any) error {
	return &paramError{param, fmt.Errorf("%w: %s", errBadRequest, fmt.Sprintf(format, args...))}
}

// unsupported is a 501 about one field folio does not implement.
func unsupported(param, format string, args ...any) error {
	return &paramError{param, fmt.Errorf("%w: %s", errNotImplemented, fmt.Sprintf(format, args...))}
}

// oaiError is the body of OpenAI's error JSON, {"error": {...}}.
type oaiError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func oaiErrorOf(err error) (int, oaiError) {
	status := statusOf(err)
	e := oaiError{Message: err.Error(), Type: "invalid_request_error"}
	if status >= 500 && status != http.StatusNotImplemented {
		e.Type = "server_error"
	}
	var pe *paramError
	if errors.As(err, &pe) {
		e.Param = &pe.param
	}
	code := ""
	switch {
	case errors.Is(err, ErrModelNotFound):
		code = "model_not_found"
	case status == http.StatusNotImplemented:
		code = "unsupported_parameter"
	case status == http.StatusRequestEntityTooLarge:
		code = "request_too_large"
	case status == http.StatusRequestTimeout:
		code = "request_timeout"
	case errors.Is(err, runner.ErrBusy):
		code = "server_busy"
	}
	if code != "" {
		e.Code = &code
	}
	return status, e
}

// writeOAIError sends OpenAI's error JSON with the status statusOf gives.
func writeOAIError(w http.ResponseWriter, err error) {
	status, e := oaiErrorOf(err)
	writeJSON(w, status, map[string]oaiError{"error": e})
}

// sse writes server-sent events: "data: {json}\n\n", then "data: [DONE]".
type sse struct {
	w       http.ResponseWriter
	started bool
}

func (o *sse) send(v any) error { return o.event("", v) }

// event sends v as an SSE event named name ("": a bare data line, as
// chat completions stream).
func (o *sse) event(name string, v any) error {
	if !o.started {
		h := o.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		o.w.WriteHeader(http.StatusOK)
		o.started = true
	}
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if name != "" {
		if _, err := fmt.Fprintf(o.w, "event: %s\n", name); err != nil {
			return err
		}
	}
	if _, err := fmt.Fprintf(o.w, "data: %s\n\n", data); err != nil {
		return err
	}
	if f, ok := o.w.(http.Flusher); ok {
		f.Flush()
	}
	return nil
}

func (o *sse) done() {
	fmt.Fprint(o.w, "data: [DONE]\n\n")
	if f, ok := o.w.(http.Flusher); ok {
		f.Flush()
	}
}

// fail reports an error: as a status before the stream began, else as an
// error event (OpenAI's clients raise it), with no [DONE] after it.
func (o *sse) fail(err error) {
	if !o.started {
		writeOAIError(o.w, err)
		return
	}
	_, e := oaiErrorOf(err)
	o.send(map[string]oaiError{"error": e})
}

// oaiSampling are the fields the chat and legacy completion requests share.
type oaiSampling struct {
	Model         string `json:"model"`
	N             *int   `json:"n"`
	Stream        bool   `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens        *int               `json:"max_tokens"`
	Stop             json.RawMessage    `json:"stop"`
	Seed             *int64             `json:"seed"`
	Temperature      *float64           `json:"temperature"`
	TopP             *float64           `json:"top_p"`
	FrequencyPenalty *float64           `json:"frequency_penalty"`
	PresencePenalty  *float64           `json:"presence_penalty"`
	LogitBias        map[string]float64 `json:"logit_bias"`
	User             string             `json:"user"` // ignored

	bias map[int32]float32 // LogitBias as options reads it
}

func (q *oaiSampling) includeUsage() bool {
	return q.Stream && q.StreamOptions != nil && q.StreamOptions.IncludeUsage
}

// options checks the shared fields and turns them into Ollama options, so
// that options() applies the same checks as on /api/*. maxTokens is
// max_tokens or its newer name.
func (q *oaiSampling) options(maxTokens *int) (map[string]any, int, error) {
	if q.Model == "" {
		return nil, 0, badParam("model", "model is required")
	}
	n := 1
	if q.N != nil {
		n = *q.N
	}
	if n < 1 {
		return nil, 0, badParam("n", "n %d: ask for at least 1 choice", n)
	}
	bias, err := logitBias(q.LogitBias)
	if err != nil {
		return nil, 0, err
	}
	q.bias = bias
	raw := map[string]any{"temperature": 1.0, "top_p": 1.0}
	if q.Temperature != nil {
		raw["temperature"] = *q.Temperature
	}
	if q.TopP != nil {
		raw["top_p"] = *q.TopP
	}
	if q.FrequencyPenalty != nil {
		raw["frequency_penalty"] = *q.FrequencyPenalty
	}
	if q.PresencePenalty != nil {
		raw["presence_penalty"] = *q.PresencePenalty
	}
	if q.Seed != nil {
		raw["seed"] = *q.Seed
	}
	if maxTokens != nil {
		if *maxTokens < 1 && *maxTokens != -1 {
			return nil, 0, badParam("max_tokens", "max_tokens %d: use a positive count, or leave it out for no limit", *maxTokens)
		}
		raw["num_predict"] = int64(*maxTokens)
	}
	stop, err := stopStrings(q.Stop)
	if err != nil {
		return nil, 0, err
	}
	if stop != nil {
		raw["stop"] = stop
	}
	return raw, n, nil
}

// logitBias reads OpenAI's logit_bias: token ids, as strings, to biases
// from -100 to 100 added to their logits.
func logitBias(m map[string]float64) (map[int32]float32, error) {
	if len(m) == 0 {
		return nil, nil
	}
	out := make(map[int32]float32, len(m))
	for k, b := range m {
		id, err := strconv.ParseInt(k, 10, 32)
		if err != nil || id < 0 {
			return nil, badParam("logit_bias", "logit_bias: %q is not a token id: use the ids of the model's vocabulary as keys", k)
		}
		if b < -100 || b > 100 {
			return nil, badParam("logit_bias", "logit_bias of token %d is %v: use -100 to 100", id, b)
		}
		out[int32(id)] = float32(b)
	}
	return out, nil
}

// applyBias hands the request's logit_bias to c once its model l is
// known, naming an id outside the vocabulary. It comes after confFor,
// which rebuilds c's sampling options.
func (q *oaiSampling) applyBias(c *completion, l *loaded) error {
	for id := range q.bias {
		if int(id) >= l.model.Arch.Vocab {
			return badParam("logit_bias", "logit_bias: token %d is outside the vocabulary of %s (ids 0 to %d)", id, q.Model, l.model.Arch.Vocab-1)
		}
	}
	c.sample.LogitBias = q.bias
	return nil
}

// stopStrings reads OpenAI's stop: null, a string or an array of strings.
func stopStrings(raw json.RawMessage) ([]any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []any{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, badParam("stop", "stop must be a string or an array of strings")
	}
	out := make([]any, len(many))
	for i, s := range many {
		out[i] = s
	}
	return out, nil
}

// oaiUsage is OpenAI's usage object.
type oaiUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

// oaiDelta is what one engine event adds to a choice.
type oaiDelta struct {
	index              int // the choice: sample i of prompt p is p*n + i
	content, reasoning string
	logprob            *runner.TokenLogprob
	calls              []api.ToolCall // tool calls completed by this delta
	finish             string         // "stop", "length" or "tool_calls" on the choice's last delta
	stopped            string         // on the last delta: the stop string that ended the choice, if one did
}

// oaiJob is an OpenAI request on the engine: one stream per prompt, each
// with n samples.
type oaiJob struct {
	c       *completion // the options every prompt shares
	streams []*runner.Stream
	replies []*replySplitter // per choice
	newTool func() *toolStream
	usage   oaiUsage
}

// start submits one engine request per prompt; cancel ends them all.
func (j *oaiJob) start(ctx context.Context, prompts [][]int32) error {
	for _, ids := range prompts {
		c := *j.c
		c.ids = ids
		st, err := c.start(ctx)
		if err != nil {
			return err
		}
		j.streams = append(j.streams, st)
		for range c.n {
			var ts *toolStream
			if j.newTool != nil {
				ts = j.newTool()
			}
			j.replies = append(j.replies, newReplySplitter(c.thinkSplit, ts))
		}
	}
	return nil
}

func (j *oaiJob) cancel() {
	for _, st := range j.streams {
		st.Cancel()
	}
}

// choices is the number of choices the job answers with.
func (j *oaiJob) choices() int { return len(j.replies) }

// run reads the streams to their ends, prompt by prompt (the engine
// computes them together meanwhile; events wait in their streams), and
// hands every delta to emit in order.
func (j *oaiJob) run(ctx context.Context, emit func(oaiDelta) error) error {
	for p, st := range j.streams {
		for {
			ev, ok := st.Recv(ctx)
			if !ok {
				if err := ctx.Err(); err != nil {
					return err
				}
				break
			}
			if ev.Done && ev.Err != nil {
				return ev.Err
			}
			d := oaiDelta{index: p*j.c.n + ev.Index, logprob: ev.Logprob}
			reply := j.replies[d.index]
			d.content, d.reasoning, d.calls = reply.add(ev.Text)
			if ev.Done {
				c, t, more := reply.flush()
				d.content += c
				d.reasoning += t
				d.calls = append(d.calls, more...)
				d.finish, d.stopped = ev.Reason, ev.Stopped
				if reply.called() && d.finish == "stop" {
					d.finish = "tool_calls"
				}
			}
			if ev.Stats != nil {
				// the whole prompt, as /api's prompt_eval_count, of which cached_tokens came from the prefix cache
				j.usage.PromptTokens += ev.Stats.PromptTokens + ev.Stats.CachedTokens
				j.usage.PromptTokensDetails.CachedTokens += ev.Stats.CachedTokens
				j.usage.CompletionTokens += ev.Stats.EvalTokens
				j.usage.TotalTokens = j.usage.PromptTokens + j.usage.CompletionTokens
			}
			if err := emit(d); err != nil {
				return err
			}
		}
	}
	return nil
}

// oaiChoice is a choice as it builds up, for a response sent whole.
type oaiChoice struct {
	text, reasoning strings.Builder
	lps             []*runner.TokenLogprob
	calls           []api.ToolCall
	finish, stopped string
}

// collect runs j to the end and returns its choices.
func (j *oaiJob) collect(ctx context.Context) ([]oaiChoice, error) {
	out := make([]oaiChoice, j.choices())
	err := j.run(ctx, func(d oaiDelta) error {
		c := &out[d.index]
		c.text.WriteString(d.content)
		c.reasoning.WriteString(d.reasoning)
		c.calls = append(c.calls, d.calls...)
		if d.logprob != nil {
			c.lps = append(c.lps, d.logprob)
		}
		if d.finish != "" {
			c.finish, c.stopped = d.finish, d.stopped
		}
		return nil
	})
	return out, err
}

// oaiHead starts every completion object and chunk.
type oaiHead struct {
	ID                string `json:"id"`
	Object            string `json:"object"`
	Created           int64  `json:"created"`
	Model             string `json:"model"`
	SystemFingerprint string `json:"system_fingerprint"`
}

func (s *Server) oaiHead(prefix, object, model string) oaiHead {
	return oaiHead{ID: fmt.Sprintf("%s-%016x", prefix, rand.Uint64()), Object: object,
		Created: s.cfg.Now().Unix(), Model: model, SystemFingerprint: "fp_folio"}
}

// oaiObject is a chat.completion, a text_completion or a chunk of one.
type oaiObject[C any] struct {
	oaiHead
	Choices []C `json:"choices"`
	Usage   any `json:"usage,omitempty"` // *oaiUsage; in chunks absent, or null but in the last
}

// begin decodes the body into q, checks it, and acquires the model named
// by *model; on an error it answers, and ok is false.
func (s *Server) begin(w http.ResponseWriter, r *http.Request, q any, check func() error, model *string) (l *loaded, release func(), ok bool) {
	err := decode(r, q)
	if err == nil {
		err = check()
	}
	if err == nil {
		l, release, err = s.models.acquire(r.Context(), *model, nil)
		if err != nil {
			err = &paramError{"model", err}
		}
	}
	if err != nil {
		writeOAIError(w, err)
		return nil, nil, false
	}
	return l, release, true
}

// oaiWriter makes one endpoint's objects from a job's choices and deltas.
type oaiWriter interface {
	whole(choices []oaiChoice, usage oaiUsage) any // the response when not streaming
	opening(choices int) []any                     // chunks before the first delta
	chunks(d oaiDelta) []any                       // chunks for one delta (none is fine)
	usage(usage oaiUsage) any                      // the last chunk under include_usage
}

// respond runs job and answers with one object, or with SSE chunks.
func respond(ctx context.Context, w http.ResponseWriter, job *oaiJob, q *oaiSampling, f oaiWriter) {
	if !q.Stream {
		choices, err := job.collect(ctx)
		if err != nil {
			writeOAIError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, f.whole(choices, job.usage))
		return
	}
	out := &sse{w: w}
	send := func(chunks []any) error {
		for _, c := range chunks {
			if err := out.send(c); err != nil {
				return err
			}
		}
		return nil
	}
	err := send(f.opening(job.choices()))
	if err == nil {
		err = job.run(ctx, func(d oaiDelta) error { return send(f.chunks(d)) })
	}
	if err == nil && q.includeUsage() {
		err = out.send(f.usage(job.usage))
	}
	if err != nil {
		out.fail(err)
		return
	}
	out.done()
}

// chunkUsage is a chunk's usage field: absent, or null until the last
// chunk when the client asked for usage.
func chunkUsage(q *oaiSampling) any {
	if q.includeUsage() {
		return (*oaiUsage)(nil)
	}
	return nil
}
