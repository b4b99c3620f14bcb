package server

import (
	"context"
	"fmt"

	ollamatemplate "github.com/ollama/ollama/template"

	"folio/models/gotemplate"
	"folio/models/tokenizer"
)

// Fill in the middle (a request's suffix, Ollama's insert capability)
// takes one of two forms. A model whose Go template uses .Suffix (Ollama's
// codellama and qwen2.5-coder templates) has it rendered over .Prompt and
// .Suffix, as Ollama does; otherwise a model whose vocabulary has the FIM
// tokens gets llama.cpp's infill prompt, [BOS] FIM_PRE prompt FIM_SUF
// suffix FIM_MID. A model with neither refuses a suffix, with Ollama's
// message, rather than ignore it.

// suffixTemplate returns the Go template that renders a suffix: the
// request's template, else the model's, when it uses .Suffix; nil when
// there is none. The GGUF file's own template is Jinja and never does.
func suffixTemplate(l *loaded, conf modelConf, reqTmpl string) (*gotemplate.Template, error) {
	tmpl := reqTmpl
	if tmpl == "" {
		tmpl = conf.Template
	}
	if tmpl == "" || tmpl == l.template {
		return nil, nil
	}
	t, ok, err := goTemplate(tmpl, reqTmpl != "")
	if err != nil || !ok || !t.Suffix() {
		return nil, err
	}
	return t, nil
}

// canInsert reports whether a model fills in the middle: tmpl, its
// template, uses .Suffix, or its vocabulary v has the FIM tokens (v may
// be nil).
func canInsert(tmpl string, v *tokenizer.Vocab) bool {
	if t, ok, err := goTemplate(tmpl, false); ok && err == nil && t.Suffix() {
		return true
	}
	return v != nil && v.HasFIM()
}

// insertion is a fill-in-the-middle request.
type insertion struct {
	prompt, suffix string // the text before and after the gap
	tmpl           string // the request's template; "": the model's
	raw            bool   // skip the template, leaving the FIM tokens
	context        int    // tokens of a context before the prompt (then no BOS)
}

// insertPrompt returns the prompt asking model for the text between
// in.prompt and in.suffix, as its text (for debug_render_only) and its
// ids, fitted to w.
func (s *Server) insertPrompt(ctx context.Context, l *loaded, conf modelConf, model string, in insertion, w window) (string, []int32, error) {
	tok := l.model.Tok
	v := tok.Vocab()
	bos := in.context == 0
	plain := tokenizer.EncodeOptions{}
	pre, suf := tok.Encode(in.prompt, plain), tok.Encode(in.suffix, plain)
	t, err := suffixTemplate(l, conf, in.tmpl)
	if err != nil {
		return "", nil, err
	}
	if t != nil && !in.raw {
		render := func(prompt, suffix string) (string, []int32, error) {
			text, err := t.Execute(ctx, ollamatemplate.Values{Prompt: prompt, Suffix: suffix})
			if err != nil {
				return "", nil, fmt.Errorf("%w: chat template: %v", errBadRequest, err)
			}
			ids := encodePrompt(tok, text, true)
			if !bos && len(ids) > 0 && ids[0] == v.BOS {
				ids = ids[1:]
			}
			return text, ids, nil
		}
		text, ids, err := render(in.prompt, in.suffix)
		if err != nil || w.fits(in.context+len(ids)) {
			return text, ids, err
		}
		// cut the two texts at token boundaries and render them again
		extra := in.context + max(len(ids)-len(pre)-len(suf), 0)
		if pre, suf, err = fitFIM(w, pre, suf, extra); err != nil {
			return "", nil, err
		}
		return render(tok.Decode(pre, tokenizer.DecodeOptions{}), tok.Decode(suf, tokenizer.DecodeOptions{}))
	}
	if !v.HasFIM() {
		how := "use a code model trained on fill in the middle, or leave suffix out"
		if t != nil {
			how = "leave raw out, so that the template places the suffix"
		}
		return "", nil, fmt.Errorf("%w: %q does not support insert: %s", errBadRequest, model, how)
	}
	if pre, suf, err = fitFIM(w, pre, suf, in.context+len(v.FIMPrompt(nil, nil, bos))); err != nil {
		return "", nil, err
	}
	ids := v.FIMPrompt(pre, suf, bos)
	return tok.Decode(ids, tokenizer.DecodeOptions{Special: true}), ids, nil
}

// fitFIM cuts the text before the gap from its start and the text after
// it from its end, as llama.cpp's infill does, until both fit w beside
// extra tokens (markers, template, context); the suffix keeps at most a
// quarter of the room. Fitting prompt and suffix apart keeps the FIM
// markers, which a cut of the whole prompt from its start would drop.
func fitFIM(w window, pre, suf []int32, extra int) ([]int32, []int32, error) {
	if w.fits(extra + len(pre) + len(suf)) {
		return pre, suf, nil
	}
	room := w.budget() - extra
	if room < 1 {
		return nil, nil, fmt.Errorf("%w: num_ctx %d leaves no room for the prompt and suffix: raise num_ctx", errBadRequest, w.numCtx)
	}
	nsuf := min(len(suf), room/4)
	npre := min(len(pre), room-nsuf)
	nsuf = min(len(suf), room-npre)
	return pre[len(pre)-npre:], suf[:nsuf], nil
}
