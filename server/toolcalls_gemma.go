package server

import (
	"encoding/json"
	"strings"
	"unicode"

	"github.com/ollama/ollama/api"
)

// Gemma 4 writes each tool call between tags of its own, its arguments in
// Gemma's notation rather than JSON, which its chat template writes back
// into the conversation the same way:
//
//	<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:2}<tool_call|>
//
// An object is {key:value,…} with bare keys, an array [value,…], a string
// its text as it is between two <|"|> marks, and a number, true, false
// and null are written as in JSON; whitespace may come between any two
// of these parts. llama.cpp knows the template by the quoted literal it writes
// before a call's name (gemmaTemplateMark), and so does newToolStream.
const (
	gemmaTemplateMark = `'<|tool_call>call:'`
	gemmaCall         = "<|tool_call>"
	gemmaCallEnd      = "<tool_call|>"
	gemmaQuote        = `<|"|>`
)

// gemmaRead reads one of Gemma 4's calls between its tags (taggedCalls):
// "call:", the name, then the arguments, an object, as JSON.
func gemmaRead(p *callMaker, text string) ([]api.ToolCall, bool) {
	rest, ok := strings.CutPrefix(text, "call:")
	if !ok {
		return nil, false
	}
	name, _, ok := strings.Cut(rest, "{")
	if !ok {
		return nil, false
	}
	g := gemmaArgs{rest: rest[len(name):]}
	args, ok := g.list(nil, '{', '}', g.member)
	if !ok || strings.TrimSpace(g.rest) != "" {
		return nil, false
	}
	return oneCall(p.call(name, args))
}

// gemmaArgs converts Gemma 4's notation to JSON from the start of rest,
// one value after another. Each method appends the JSON of what it reads
// to dst and returns it; false when rest does not start with one.
type gemmaArgs struct{ rest string }

func (g *gemmaArgs) space() { g.rest = strings.TrimLeftFunc(g.rest, unicode.IsSpace) }

// value reads any value.
func (g *gemmaArgs) value(dst []byte) ([]byte, bool) {
	g.space()
	switch {
	case strings.HasPrefix(g.rest, gemmaQuote):
		s, rest, ok := strings.Cut(g.rest[len(gemmaQuote):], gemmaQuote)
		if !ok {
			return nil, false
		}
		g.rest = rest
		q, _ := json.Marshal(s)
		return append(dst, q...), true
	case strings.HasPrefix(g.rest, "{"):
		return g.list(dst, '{', '}', g.member)
	case strings.HasPrefix(g.rest, "["):
		return g.list(dst, '[', ']', g.value)
	}
	n := strings.IndexFunc(g.rest, func(r rune) bool { return r == ',' || r == '}' || r == ']' || unicode.IsSpace(r) })
	if n < 0 {
		n = len(g.rest)
	}
	lit := g.rest[:n]
	switch {
	case lit == "true", lit == "false", lit == "null":
	case lit != "" && (lit[0] == '-' || '0' <= lit[0] && lit[0] <= '9') && json.Valid([]byte(lit)): // a number
	default:
		return nil, false
	}
	g.rest = g.rest[n:]
	return append(dst, lit...), true
}

// member reads an object's key (its text up to ':', as llama.cpp reads
// it, without the whitespace around it) and its value.
func (g *gemmaArgs) member(dst []byte) ([]byte, bool) {
	i := strings.IndexAny(g.rest, ":}")
	if i < 0 || g.rest[i] != ':' || strings.TrimSpace(g.rest[:i]) == "" {
		return nil, false
	}
	k, _ := json.Marshal(strings.TrimSpace(g.rest[:i]))
	g.rest = g.rest[i+1:]
	return g.value(append(append(dst, k...), ':'))
}

// list reads an object or an array: open, then items (each read by item)
// separated by commas, then close.
func (g *gemmaArgs) list(dst []byte, open, close byte, item func([]byte) ([]byte, bool)) ([]byte, bool) {
	if g.rest == "" || g.rest[0] != open {
		return nil, false
	}
	g.rest = g.rest[1:]
	dst = append(dst, open)
	g.space()
	if g.rest != "" && g.rest[0] == close {
		g.rest = g.rest[1:]
		return append(dst, close), true
	}
	for {
		var ok bool
		if dst, ok = item(dst); !ok {
			return nil, false
		}
		g.space()
		switch {
		case g.rest == "":
			return nil, false
		case g.rest[0] == ',':
			g.rest = g.rest[1:]
			dst = append(dst, ',')
		case g.rest[0] == close:
			g.rest = g.rest[1:]
			return append(dst, close), true
		default:
			return nil, false
		}
	}
}
