package server

import (
	"encoding/json"
	"fmt"
	"net/http"

	"folio/models/tokenizer"
	"folio/runner"
)

// oaiCompletionRequest is POST /v1/completions (OpenAI's legacy text
// completions).
type oaiCompletionRequest struct {
	oaiSampling
	Prompt   json.RawMessage `json:"prompt"`   // a string, strings, token ids, or lists of token ids
	Logprobs *int            `json:"logprobs"` // how many alternatives per token; 0: the chosen token's only
	Echo     bool            `json:"echo"`     // the prompt starts each choice's text
	Suffix   string          `json:"suffix"`   // fill in the middle: the text after the completion
	BestOf   *int            `json:"best_of"`
}

// oaiInput is one prompt, or one input to embed: text, or token ids.
type oaiInput struct {
	text   string
	ids    []int32
	tokens bool
}

// parseInputs reads OpenAI's prompt or input union: a string, an array
// of strings, an array of token ids, or an array of such arrays.
func parseInputs(raw json.RawMessage, param string) ([]oaiInput, error) {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []oaiInput{{text: one}}, nil
	}
	var out []oaiInput
	var texts []string
	var ids []int32
	var lists [][]int32
	switch {
	case json.Unmarshal(raw, &texts) == nil:
		for _, t := range texts {
			out = append(out, oaiInput{text: t})
		}
	case json.Unmarshal(raw, &ids) == nil:
		out = []oaiInput{{ids: ids, tokens: true}}
	case json.Unmarshal(raw, &lists) == nil:
		for _, l := range lists {
			out = append(out, oaiInput{ids: l, tokens: true})
		}
	default:
		return nil, badParam(param, "%s must be a string, an array of strings, an array of token ids or an array of such arrays", param)
	}
	if len(out) == 0 {
		return nil, badParam(param, "%s is an empty array", param)
	}
	return out, nil
}

// check validates the request and returns the completion it asks for
// (without its model or prompt) and its prompts.
func (q *oaiCompletionRequest) check() (*completion, []oaiInput, error) {
	raw, n, err := q.options(q.MaxTokens)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case q.Echo && q.Logprobs != nil:
		return nil, nil, unsupported("echo", "echo with logprobs is not supported (folio does not score prompt tokens): leave one of them out")
	case q.Echo && q.Suffix != "":
		return nil, nil, badParam("echo", "echo with a suffix: the completion goes between the prompt and the suffix; leave echo out")
	case q.BestOf != nil && *q.BestOf != n:
		return nil, nil, unsupported("best_of", "best_of %d: folio does not rank samples; use n", *q.BestOf)
	case q.Logprobs != nil && *q.Logprobs < 0:
		return nil, nil, badParam("logprobs", "logprobs %d: use 0 to 20", *q.Logprobs)
	}
	inputs := []oaiInput{{}} // no prompt: generate from BOS, as OpenAI does from <|endoftext|>
	if len(q.Prompt) > 0 && string(q.Prompt) != "null" {
		if inputs, err = parseInputs(q.Prompt, "prompt"); err != nil {
			return nil, nil, err
		}
	}
	opts, sample, err := options(raw)
	if err != nil {
		return nil, nil, err
	}
	c := &completion{opts: opts, sample: sample, raw: raw, n: n}
	if q.Logprobs != nil {
		c.logprobs, c.topLog = true, *q.Logprobs
	}
	return c, inputs, nil
}

// oaiCompletions serves POST /v1/completions. A text prompt goes through
// the model's chat template as a user message, as Ollama's /v1/completions
// (and /api/generate) does; a model without one, or token ids, get the
// prompt as it is. With a suffix the prompt is the text before the
// completion and goes through insertPrompt, as /api/generate's; echo
// starts each choice's text with its prompt.
func (s *Server) oaiCompletions(w http.ResponseWriter, r *http.Request) {
	var req oaiCompletionRequest
	var c *completion
	var inputs []oaiInput
	l, release, ok := s.begin(w, r, &req, func() (err error) {
		c, inputs, err = req.check()
		return err
	}, &req.Model)
	if !ok {
		return
	}
	defer release()
	if err := generates(l, req.Model, "generate"); err != nil {
		writeOAIError(w, err)
		return
	}
	conf, err := s.confFor(c, req.Model)
	if err != nil {
		writeOAIError(w, err)
		return
	}
	c.model = l
	if err := req.applyBias(c, l); err != nil {
		writeOAIError(w, err)
		return
	}
	win := newWindow(l, c.opts, nil) // Ollama's /v1 truncates as its /api/generate does
	tok := l.model.Tok
	prompts := make([][]int32, len(inputs))
	var echoes []string
	for i, in := range inputs {
		if in.tokens {
			for j, id := range in.ids { // before truncation can drop a bad one
				if id < 0 || int(id) >= l.model.Arch.Vocab {
					writeOAIError(w, fmt.Errorf("%w: prompt token %d at %d is outside the vocabulary of %d", errBadRequest, id, j, l.model.Arch.Vocab))
					return
				}
			}
			if req.Echo || req.Suffix != "" {
				in.text = tok.Decode(in.ids, tokenizer.DecodeOptions{})
			}
		}
		if req.Echo {
			echoes = append(echoes, in.text)
		}
		switch {
		case req.Suffix != "":
			if _, prompts[i], err = s.insertPrompt(r.Context(), l, conf, req.Model, insertion{prompt: in.text, suffix: req.Suffix}, win); err != nil {
				writeOAIError(w, &paramError{"suffix", err})
				return
			}
		case in.tokens:
			prompts[i] = in.ids
		case l.template == "" && conf.Template == "":
			prompts[i] = encodePrompt(l.model.Tok, in.text, false)
		default:
			p := &chatPrompt{s: s, ctx: r.Context(), l: l, conf: conf}
			if _, prompts[i], err = p.fit(conf.generateMessages("", in.text, false), win); err != nil {
				writeOAIError(w, err)
				return
			}
		}
		if prompts[i], err = s.fitTokens(l, win, prompts[i]); err != nil {
			writeOAIError(w, err)
			return
		}
	}
	job := &oaiJob{c: c}
	defer job.cancel()
	if err := job.start(r.Context(), prompts); err != nil {
		writeOAIError(w, err)
		return
	}
	respond(r.Context(), w, job, &req.oaiSampling, &textWriter{head: s.oaiHead("cmpl", "text_completion", req.Model),
		tok: tok, logprobs: c.logprobs, null: chunkUsage(&req.oaiSampling), echoes: echoes, n: c.n})
}

// The text_completion object (whole and in chunks).
type (
	oaiTextChoice struct {
		Text         string             `json:"text"`
		Index        int                `json:"index"`
		Logprobs     *oaiLegacyLogprobs `json:"logprobs"`
		FinishReason *string            `json:"finish_reason"`
	}
	// oaiLegacyLogprobs is the completions API's logprobs object;
	// text_offset counts bytes from the start of the choice's text.
	oaiLegacyLogprobs struct {
		Tokens        []string             `json:"tokens"`
		TokenLogprobs []float64            `json:"token_logprobs"`
		TopLogprobs   []map[string]float64 `json:"top_logprobs"`
		TextOffset    []int                `json:"text_offset"`
	}
)

// legacyLogprobs converts log-probabilities whose first token starts at
// byte offset of the text; it returns the offset after the last one.
func legacyLogprobs(tok *tokenizer.Tokenizer, lps []*runner.TokenLogprob, offset int) (*oaiLegacyLogprobs, int) {
	out := &oaiLegacyLogprobs{Tokens: []string{}, TokenLogprobs: []float64{}, TopLogprobs: []map[string]float64{}, TextOffset: []int{}}
	for _, lp := range lps {
		o := ollamaLogprob(tok, lp)
		top := map[string]float64{}
		for _, t := range o.TopLogprobs {
			if _, dup := top[t.Token]; !dup { // two tokens may print alike; keep the likelier
				top[t.Token] = t.Logprob
			}
		}
		out.Tokens = append(out.Tokens, o.Token)
		out.TokenLogprobs = append(out.TokenLogprobs, o.Logprob)
		out.TopLogprobs = append(out.TopLogprobs, top)
		out.TextOffset = append(out.TextOffset, offset)
		offset += len(o.Token)
	}
	return out, offset
}

type textWriter struct {
	head     oaiHead
	tok      *tokenizer.Tokenizer
	logprobs bool
	null     any      // the usage of every chunk but the last
	offsets  []int    // per choice, streaming: text_offset of its next token
	echoes   []string // per prompt, with echo: the text its choices start with
	n        int      // choices per prompt
}

// echo is the text choice i starts with: its prompt under echo.
func (f *textWriter) echo(i int) string {
	if f.echoes == nil {
		return ""
	}
	return f.echoes[i/f.n]
}

func (f *textWriter) whole(choices []oaiChoice, usage oaiUsage) any {
	resp := oaiObject[oaiTextChoice]{oaiHead: f.head, Choices: []oaiTextChoice{}, Usage: &usage}
	for i := range choices {
		c := &choices[i]
		ch := oaiTextChoice{Text: f.echo(i) + c.text.String(), Index: i, FinishReason: &c.finish}
		if f.logprobs {
			ch.Logprobs, _ = legacyLogprobs(f.tok, c.lps, 0)
		}
		resp.Choices = append(resp.Choices, ch)
	}
	return resp
}

// opening sends, under echo, each choice's prompt first.
func (f *textWriter) opening(choices int) []any {
	f.offsets = make([]int, choices)
	var out []any
	for i := range choices {
		if e := f.echo(i); e != "" {
			out = append(out, oaiObject[oaiTextChoice]{oaiHead: f.head, Choices: []oaiTextChoice{{Text: e, Index: i}}, Usage: f.null})
		}
	}
	return out
}

func (f *textWriter) chunks(d oaiDelta) []any {
	if d.content == "" && d.logprob == nil && d.finish == "" {
		return nil
	}
	ch := oaiTextChoice{Text: d.content, Index: d.index}
	if d.finish != "" {
		ch.FinishReason = &d.finish
	}
	if d.logprob != nil {
		ch.Logprobs, f.offsets[d.index] = legacyLogprobs(f.tok, []*runner.TokenLogprob{d.logprob}, f.offsets[d.index])
	}
	return []any{oaiObject[oaiTextChoice]{oaiHead: f.head, Choices: []oaiTextChoice{ch}, Usage: f.null}}
}

func (f *textWriter) usage(usage oaiUsage) any {
	return oaiObject[oaiTextChoice]{oaiHead: f.head, Choices: []oaiTextChoice{}, Usage: &usage}
}
