package server

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/ollama/ollama/api"
	ollamatemplate "github.com/ollama/ollama/template"
	"github.com/ollama/ollama/thinking"
)

// A model can take tools and think when its chat template says so, as
// Ollama's server reads it (Model.Capabilities): tools when the template
// renders the request's tools, thinking when it wraps a message's thinking
// in tags. A request that asks for either from a model without it is a
// 400 with Ollama's message; a model that thinks does so unless the
// request says think false.

// templateCaps is what a chat template lets a request ask for.
type templateCaps struct {
	tools                 bool   // the template renders tools
	thinkOpen, thinkClose string // the tags around thinking; "" when the model does not think
	harmony               bool   // the template writes harmony (gpt-oss): channels, not tags
}

func (c templateCaps) thinks() bool { return c.harmony || c.thinkOpen != "" && c.thinkClose != "" }

// capsCache holds the capabilities of the templates of models by their
// text, read once.
var capsCache sync.Map // string → templateCaps

// jinjaTools finds the variable tools in a Jinja tag ({{ }} or {% %}),
// not as an attribute of something else (message.tools).
var jinjaTools = regexp.MustCompile(`\{[{%][^}]*?(^|[^.\w])tools\b`)

// Mistral's reasoning models (Magistral, Ministral 3 Reasoning) think
// between these, which their templates write back for a thinking block.
const (
	mistralThink    = "[THINK]"
	mistralThinkEnd = "[/THINK]"
)

// Gemma 4 thinks in a channel named thought, closed by <channel|>:
//
//	<|channel>thought
//	The user greets me.<channel|>Hello!
//
// With enable_thinking false its template writes an empty one after the
// generation prompt. Its replies may also carry channel marks that hold
// no thought: an empty <|channel>, a stray <channel|> after the answer
// (thinkSplitter drops them).
const (
	gemmaChannel  = "<|channel>"
	gemmaThink    = gemmaChannel + "thought"
	gemmaThinkEnd = "<channel|>"
)

// capsOf reads a model's chat template: Ollama's Go syntax the way
// Ollama does (the variables it names; the text around {{ .Thinking }}
// inside the range over messages), Jinja by its tags naming tools and by
// the <think> … </think> that Qwen3, QwQ and DeepSeek-R1 templates write
// (or Mistral's [THINK] … [/THINK], or Gemma 4's channel).
// A model without a template has neither.
func capsOf(tmpl string) templateCaps {
	if tmpl == "" {
		return templateCaps{}
	}
	if v, ok := capsCache.Load(tmpl); ok {
		return v.(templateCaps)
	}
	var c templateCaps
	switch _, isGo, err := goTemplate(tmpl, false); {
	case isGo && err == nil:
		// a parse of its own: the trees goTemplate keeps carry the empty
		// text nodes of its bounds, which would hide the thinking tags
		if t, err := ollamatemplate.Parse(tmpl); err == nil {
			vars, _ := t.Vars()
			c.tools = slices.Contains(vars, "tools")
			c.thinkOpen, c.thinkClose = thinking.InferTags(t.Template)
		}
	case !isGo:
		c.tools = jinjaTools.MatchString(tmpl)
		switch {
		case strings.Contains(tmpl, "<think>") && strings.Contains(tmpl, "</think>"):
			c.thinkOpen, c.thinkClose = "<think>", "</think>"
		case strings.Contains(tmpl, mistralThink) && strings.Contains(tmpl, mistralThinkEnd):
			c.thinkOpen, c.thinkClose = mistralThink, mistralThinkEnd
		case strings.Contains(tmpl, gemmaThink) && strings.Contains(tmpl, gemmaThinkEnd):
			c.thinkOpen, c.thinkClose = gemmaThink, gemmaThinkEnd
		}
	}
	c.harmony = isHarmony(tmpl)
	capsCache.Store(tmpl, c)
	return c
}

// modelTemplate is the chat template a model's requests render with: its
// manifest's, else its file's.
func modelTemplate(l *loaded, conf modelConf) string {
	if conf.Template != "" {
		return conf.Template
	}
	return l.template
}

// checkCaps refuses tools or thinking from a model whose template has
// neither, with Ollama's messages, and returns the think option the
// request renders with: on, unless the request says false, for a model
// that thinks (a level, "high", "medium" or "low", is thinking on; the
// template gets the level as .ThinkLevel or reasoning_effort). The errors
// name their field as OpenAI's chat requests call it.
func checkCaps(model string, caps templateCaps, tools api.Tools, think *api.ThinkValue) (*api.ThinkValue, error) {
	if len(tools) > 0 && !caps.tools {
		return nil, &paramError{"tools", fmt.Errorf("%w: %s does not support tools (its chat template does not render them)", errBadRequest, model)}
	}
	if !caps.thinks() {
		if think.Bool() {
			return nil, &paramError{"reasoning_effort", fmt.Errorf("%w: %q does not support thinking (its chat template has no thinking tags)", errBadRequest, model)}
		}
		return think, nil
	}
	if think == nil {
		return &api.ThinkValue{Value: true}, nil
	}
	return think, nil
}
