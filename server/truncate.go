package server

import (
	"context"
	"fmt"

	"github.com/ollama/ollama/api"
)

// A prompt longer than its context is truncated, as Ollama does unless
// the request says truncate:false (then the engine answers 400 naming
// num_ctx). A chat loses whole messages first, oldest first: system
// messages and the last message (with the assistant turn whose tool calls
// it answers) stay, as Ollama's chatPrompt keeps them. Only when those
// alone still do not fit are tokens cut, from the front: the first
// num_keep tokens (BOS among them) and a chat's system prompt stay, and
// the end of the prompt, the part the answer follows, is kept.
//
// Ollama truncates to num_ctx and, when the answer then fills the
// context, shifts out half of it (after num_keep) and goes on. folio does
// not shift, so it leaves that room up front: a truncated prompt keeps
// at most num_ctx − room tokens, room being half the context, or
// num_predict when that is smaller.

// window is what a request's prompt may hold.
type window struct {
	numCtx   int  // the request's context: prompt and answer
	room     int  // tokens left for the answer once truncated
	numKeep  int  // first tokens a token cut keeps (Ollama's num_keep; < 0: as many as it may)
	truncate bool // false: a prompt that does not fit is refused
}

// newWindow is the window of a request on l with opts; truncate is the
// request's field (nil: Ollama's default, true).
func newWindow(l *loaded, opts api.Options, truncate *bool) window {
	n := opts.NumCtx
	if n <= 0 {
		n = l.model.Opt.NumCtx
	}
	room := n / 2
	if opts.NumPredict > 0 {
		room = min(room, opts.NumPredict)
	}
	return window{numCtx: n, room: max(room, 1), numKeep: opts.NumKeep, truncate: truncate == nil || *truncate}
}

// fits reports whether a prompt of n tokens goes to the engine as it
// is: it leaves the context a token to generate, or truncation is off
// (and the engine refuses it with the numbers).
func (w window) fits(n int) bool { return n < w.numCtx || !w.truncate }

// budget is the most tokens a truncated prompt keeps.
func (w window) budget() int { return w.numCtx - w.room }

// cut keeps the first keep tokens of ids (at least BOS, at most half the
// budget) and the newest ones that fill the budget.
func (w window) cut(ids []int32, keep int, bos int32) []int32 {
	budget := w.budget()
	if keep < 0 {
		keep = budget
	}
	if len(ids) > 0 && ids[0] == bos {
		keep = max(keep, 1)
	}
	keep = min(keep, budget/2)
	out := make([]int32, 0, budget)
	out = append(out, ids[:keep]...)
	return append(out, ids[len(ids)-(budget-keep):]...)
}

// fitTokens returns ids cut to w when they do not fit it, keeping the
// first num_keep tokens, and logs what went.
func (s *Server) fitTokens(l *loaded, w window, ids []int32) ([]int32, error) {
	if w.fits(len(ids)) {
		return ids, nil
	}
	if w.budget() < 1 {
		return nil, fmt.Errorf("%w: num_ctx %d leaves no room for a prompt: raise num_ctx", errBadRequest, w.numCtx)
	}
	out := w.cut(ids, w.numKeep, l.model.Tok.Vocab().BOS)
	s.cfg.Log.Debug("prompt truncated to fit num_ctx", "model", l.entry.Name, "num_ctx", w.numCtx,
		"prompt_tokens", len(ids), "tokens_dropped", len(ids)-len(out), "kept_tokens", len(out))
	return out, nil
}

// chatPrompt is a chat rendered with a model's template, to fit a window.
type chatPrompt struct {
	s     *Server
	ctx   context.Context
	l     *loaded
	conf  modelConf
	tmpl  string // the request's template; "": the model's
	tools api.Tools
	think *api.ThinkValue
	caps  templateCaps
	// constrained: the reply has a format, so a thought the prompt opens
	// is closed (closeThought)
	constrained bool
}

// encode renders msgs and tokenizes the text.
func (p *chatPrompt) encode(msgs []api.Message) (string, []int32, error) {
	text, templated, err := p.s.render(p.ctx, p.l, p.conf, p.tmpl, msgs, p.tools, p.think)
	if err != nil {
		return "", nil, err
	}
	if p.constrained {
		text = closeThought(text, p.think, p.caps)
	}
	return text, encodePrompt(p.l.model.Tok, text, templated), nil
}

// fit renders msgs (the model's system prompt and messages included)
// into a prompt that fits w: the text after whole messages were dropped,
// and its tokens, cut if those messages alone do not fit.
func (p *chatPrompt) fit(msgs []api.Message, w window) (string, []int32, error) {
	text, ids, err := p.encode(msgs)
	if err != nil || w.fits(len(ids)) {
		return text, ids, err
	}
	if w.budget() < 1 {
		return "", nil, fmt.Errorf("%w: num_ctx %d leaves no room for a prompt: raise num_ctx", errBadRequest, w.numCtx)
	}
	total := len(ids)
	// The first message kept is the earliest whose prompt fits the
	// budget, found by bisection over the candidates 1 … last (a prompt
	// shrinks as messages go); a candidate the template refuses (one that
	// starts with an assistant turn, say) counts as not fitting. When none
	// fits, the last message alone (with the system messages) is kept.
	last := len(msgs) - 1
	from, found := toolBlockStart(msgs, last), false
	for lo, hi := 1, last; lo < hi; {
		mid := (lo + hi) / 2
		start := toolBlockStart(msgs, mid)
		t, m, err := p.encode(keptMessages(msgs, start))
		if err == nil && len(m) <= w.budget() {
			hi, from, text, ids, found = mid, start, t, m, true
		} else {
			lo = mid + 1
		}
	}
	if !found {
		if text, ids, err = p.encode(keptMessages(msgs, from)); err != nil {
			return "", nil, err
		}
	}
	kept := keptMessages(msgs, from)
	dropped := len(msgs) - len(kept)
	cut := 0
	if len(ids) > w.budget() {
		n := len(ids)
		ids = w.cut(ids, max(w.numKeep, p.systemTokens(kept, ids)), p.l.model.Tok.Vocab().BOS)
		cut = n - len(ids)
	}
	p.s.cfg.Log.Debug("prompt truncated to fit num_ctx", "model", p.l.entry.Name, "num_ctx", w.numCtx,
		"prompt_tokens", total, "messages", len(msgs), "messages_dropped", dropped, "tokens_dropped", cut, "kept_tokens", len(ids))
	return text, ids, nil
}

// systemTokens is how many first tokens of ids, the prompt of kept, hold
// its leading system messages: the tokens it shares with the prompt of
// those messages alone.
func (p *chatPrompt) systemTokens(kept []api.Message, ids []int32) int {
	k := 0
	for k < len(kept) && kept[k].Role == "system" {
		k++
	}
	if k == 0 || k == len(kept) {
		return 0
	}
	_, sys, err := p.encode(kept[:k])
	if err != nil {
		return 0
	}
	n := 0
	for n < len(sys) && n < len(ids) && sys[n] == ids[n] {
		n++
	}
	return n
}

// keptMessages is msgs from index from on, after the system messages
// before it.
func keptMessages(msgs []api.Message, from int) []api.Message {
	var out []api.Message
	for _, m := range msgs[:from] {
		if m.Role == "system" {
			out = append(out, m)
		}
	}
	return append(out, msgs[from:]...)
}

// toolBlockStart is where the block of message i starts: a tool result
// goes with the results before it and the assistant turn whose calls
// they answer, never kept without them.
func toolBlockStart(msgs []api.Message, i int) int {
	if i <= 0 || msgs[i].Role != "tool" {
		return i
	}
	start := i
	for start > 0 && msgs[start-1].Role == "tool" {
		start--
	}
	if start > 0 && msgs[start-1].Role == "assistant" && len(msgs[start-1].ToolCalls) > 0 {
		return start - 1
	}
	return i
}
