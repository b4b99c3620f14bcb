package grammar

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// value is a decoded JSON value that keeps the order of object members (a
// map would lose it, and properties are emitted in schema order) and the
// text of numbers.
type value struct {
	kind  byte     // '{', '[', '"', '0' (number), 't', 'f', 'n' (null)
	text  string   // a string's value, a number's text
	keys  []string // an object's member names, in order
	elems []*value // an object's member values, or an array's elements
	// index maps a member name to its first position, for objects of more
	// than indexFrom members: lookups stay O(1) however many properties,
	// $defs or required names a schema lists.
	index map[string]int
}

// indexFrom is the member count above which an object gets an index.
const indexFrom = 8

// Limits on a schema's text, checked while it is decoded.
const (
	// maxDepth bounds the nesting of a schema's JSON, and of the compiler's
	// recursion through subschemas and $ref hops: either is a stack.
	maxDepth = 512
	// checkEvery is how many tokens or compile steps pass between looks at
	// the context, so that a request whose client has gone stops.
	checkEvery = 1024
)

// decoder reads one JSON value, watching depth and the context.
type decoder struct {
	d      *json.Decoder
	ctx    context.Context
	tokens int
}

// parseValue decodes one JSON value, and nothing after it. It stops with
// ctx's error once ctx is done.
func parseValue(ctx context.Context, data []byte) (*value, error) {
	p := &decoder{d: json.NewDecoder(bytes.NewReader(data)), ctx: ctx}
	p.d.UseNumber()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	if _, err := p.d.Token(); err != io.EOF {
		return nil, errors.New("data after the schema")
	}
	return v, nil
}

func (p *decoder) token() (json.Token, error) {
	if p.tokens++; p.tokens%checkEvery == 0 {
		if err := p.ctx.Err(); err != nil {
			return nil, stopped(err)
		}
	}
	return p.d.Token()
}

func (p *decoder) value(depth int) (*value, error) {
	tok, err := p.token()
	if err != nil {
		return nil, err
	}
	switch x := tok.(type) {
	case json.Delim:
		if depth >= maxDepth {
			return nil, fmt.Errorf("%w: it nests deeper than %d levels", errTooBig, maxDepth)
		}
		v := &value{kind: byte(x)}
		for p.d.More() {
			if x == '{' {
				k, err := p.token()
				if err != nil {
					return nil, err
				}
				v.keys = append(v.keys, k.(string))
			}
			e, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			v.elems = append(v.elems, e)
		}
		if _, err := p.token(); err != nil { // the closing delimiter
			return nil, err
		}
		if len(v.keys) > indexFrom {
			v.index = make(map[string]int, len(v.keys))
			for i, k := range v.keys {
				if _, dup := v.index[k]; !dup {
					v.index[k] = i
				}
			}
		}
		return v, nil
	case string:
		return &value{kind: '"', text: x}, nil
	case json.Number:
		return &value{kind: '0', text: string(x)}, nil
	case bool:
		if x {
			return &value{kind: 't'}, nil
		}
		return &value{kind: 'f'}, nil
	case nil:
		return &value{kind: 'n'}, nil
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}

// find returns the position of the first member key of an object, or -1.
func (v *value) find(key string) int {
	if v == nil || v.kind != '{' {
		return -1
	}
	if v.index != nil {
		if i, ok := v.index[key]; ok {
			return i
		}
		return -1
	}
	for i, k := range v.keys {
		if k == key {
			return i
		}
	}
	return -1
}

// get returns the member key of an object, or nil.
func (v *value) get(key string) *value {
	if i := v.find(key); i >= 0 {
		return v.elems[i]
	}
	return nil
}

// appendJSON appends v's canonical text: compact, members in their order,
// strings as encoding/json writes them without HTML escaping. It is the one
// spelling of an enum or const value the grammar accepts.
func (v *value) appendJSON(dst []byte) []byte {
	switch v.kind {
	case '{', '[':
		dst = append(dst, v.kind)
		for i, e := range v.elems {
			if i > 0 {
				dst = append(dst, ',')
			}
			if v.kind == '{' {
				dst = appendString(dst, v.keys[i])
				dst = append(dst, ':')
			}
			dst = e.appendJSON(dst)
		}
		return append(dst, v.kind+2) // '{'+2 is '}', '['+2 is ']'
	case '"':
		return appendString(dst, v.text)
	case '0':
		return append(dst, v.text...)
	case 't':
		return append(dst, "true"...)
	case 'f':
		return append(dst, "false"...)
	}
	return append(dst, "null"...)
}

func appendString(dst []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(dst, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}

// describe names v's JSON type for error messages.
func (v *value) describe() string {
	switch v.kind {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case '0':
		return "a number"
	case 't', 'f':
		return "a boolean"
	}
	return "null"
}

// is reports whether v is of JSON Schema type t.
func (v *value) is(t string) bool {
	switch t {
	case "object":
		return v.kind == '{'
	case "array":
		return v.kind == '['
	case "string":
		return v.kind == '"'
	case "number":
		return v.kind == '0'
	case "integer":
		return v.kind == '0' && !strings.ContainsAny(v.text, ".eE")
	case "boolean":
		return v.kind == 't' || v.kind == 'f'
	case "null":
		return v.kind == 'n'
	}
	return false
}

// count reads a non-negative integer: ok is false for anything else.
func (v *value) count() (n int32, ok bool) {
	if v.kind == '0' {
		if n, err := strconv.ParseInt(v.text, 10, 32); err == nil && n >= 0 {
			return int32(n), true
		}
		if f, err := strconv.ParseFloat(v.text, 64); err == nil && f >= 0 && f == float64(int32(f)) {
			return int32(f), true // 3.0
		}
	}
	return 0, false
}

// resolve follows a JSON pointer ("#", "#/$defs/item") from root.
func resolve(root *value, ref string) (*value, error) {
	if ref != "#" && !strings.HasPrefix(ref, "#/") {
		return nil, fmt.Errorf("$ref %q: only references within the schema (#/...) are supported", ref)
	}
	v := root
	if ref == "#" {
		return v, nil
	}
	for _, tok := range splitPointer(ref[2:]) {
		switch v.kind {
		case '{':
			v = v.get(tok)
		case '[':
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(v.elems) {
				return nil, fmt.Errorf("$ref %q: no element %q", ref, tok)
			}
			v = v.elems[i]
		default:
			v = nil
		}
		if v == nil {
			return nil, fmt.Errorf("$ref %q: nothing at %q", ref, tok)
		}
	}
	return v, nil
}

// splitPointer splits a JSON pointer's tokens, undoing ~1 (/) and ~0 (~).
func splitPointer(p string) []string {
	var out []string
	cur := []byte{}
	for i := 0; i <= len(p); i++ {
		switch {
		case i == len(p) || p[i] == '/':
			out = append(out, string(cur))
			cur = cur[:0]
		case p[i] == '~' && i+1 < len(p) && p[i+1] == '1':
			cur = append(cur, '/')
			i++
		case p[i] == '~' && i+1 < len(p) && p[i+1] == '0':
			cur = append(cur, '~')
			i++
		default:
			cur = append(cur, p[i])
		}
	}
	return out
}
