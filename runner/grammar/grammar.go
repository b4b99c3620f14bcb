package grammar

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// ErrFormat is wrapped by every error about a format or schema the package
// cannot compile: malformed, unsatisfiable, or using a keyword it does not
// enforce. The server answers it with 400.
var ErrFormat = errors.New("grammar: unsupported format")

// ErrRejected is wrapped when Accept is handed a token the constraint does
// not allow: a caller that skipped Allowed or the mask.
var ErrRejected = errors.New("grammar: token not allowed")

// Grammar is a compiled format: a flat pool of nodes, one per schema (sub)
// value, that a Constraint walks. It is immutable and safe to share between
// sequences and goroutines.
type Grammar struct {
	nodes []node
	ml    []int32 // by node: the fewest bytes of a whole value (see est.go)
	doc   int32   // the document: bounded leading whitespace, then the root value
	str   int32   // a plain string, for the keys of free-form objects
}

// kind is what a node matches.
type kind uint8

const (
	kAnyOf    kind = iota // one of alts; also "any value"
	kObject               // {...}: declared properties in order, then additional ones if free
	kArray                // [...] of prefix items, then of child
	kString               // "..." of min..max code points
	kPattern              // "..." whose value the automaton dfa accepts
	kNumber               // a JSON number (integer: no fraction or exponent), within num if set
	kLiterals             // exactly one of lits: enum, const, true, false, null
	kDoc                  // the whole output: whitespace, then child
)

// node is one schema value compiled. Fields a kind does not use are zero.
type node struct {
	kind kind
	// child is the items of a kArray past its prefix (-1: none), the value
	// of every additional key of a free kObject, and the root value of the
	// kDoc.
	child int32
	// min and max bound a kArray's items or a kString's code points; max -1
	// is no limit.
	min, max int32
	integer  bool       // kNumber: digits only
	num      *numBounds // kNumber: its bounds; nil: any number
	free     bool       // kObject: additional keys (node key), each with a child value
	key      int32      // kObject, free: the node of an additional key
	props    []prop     // kObject: declared, in schema order
	lastReq  int32      // kObject: index of the last required property, -1 if none
	obj      *objInfo   // kObject: property counts and sums (est.go)
	prefix   []int32    // kArray: the items of the first positions (prefixItems)
	lits     [][]byte   // kLiterals: canonical JSON texts, sorted, distinct
	// litMin[j][k], in kLiterals, is the length of the shortest literal
	// that shares the first k bytes of lits[j] (those are adjacent, from
	// the first of them on, and j is the first when a frame holds it).
	litMin [][]int32
	alts   []int32 // kAnyOf
	dfa    *dfa    // kPattern
	isKey  bool    // kPattern: the key of an additional property (hashed: see keys.go)
}

// prop is a declared property of an object.
type prop struct {
	key      []byte // the name as JSON text, quotes included: the only spelling accepted
	value    int32
	required bool
	// window is the last property that may come next when this one is the
	// first candidate: the first required property at or after it, else the
	// last one. Properties before it that are skipped are optional.
	window int32
}

// Whitespace between tokens is bounded so that a model cannot loop on it: a
// run is one space, or a newline and at most maxIndent spaces or tabs.
const maxIndent = 32

// skipWS advances the whitespace run counter sub over b, reporting whether
// b is allowed whitespace. sub is 0 before a run, 1 after a lone space (the
// run is over), 2+k after a newline and k spaces or tabs.
func skipWS(sub *uint8, b byte) bool {
	switch {
	case b == ' ' && *sub == 0:
		*sub = 1
	case b == '\n' && *sub == 0:
		*sub = 2
	case (b == ' ' || b == '\t') && *sub >= 2 && *sub < 2+maxIndent:
		*sub++
	default:
		return false
	}
	return true
}

// JSON returns the grammar of Ollama's format "json": one JSON object, any
// keys and values (Ollama's own grammar starts at an object too; a bare
// string or number is not what callers of "json" mode parse for).
func JSON() *Grammar {
	b := newBuilder()
	g, err := b.finish(b.freeObject(b.anyValue()), nil)
	if err != nil {
		panic(err) // a fixed grammar: it always settles
	}
	return g
}

// Format compiles Ollama's format field as it came in the request: empty,
// null or "" for no constraint (a nil Grammar), "json" for any JSON object,
// or a JSON Schema object (see Schema, and its limits). It stops with ctx's
// error once ctx is done.
func Format(ctx context.Context, raw []byte) (*Grammar, error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || string(raw) == "null" || string(raw) == `""`:
		return nil, nil
	case raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("%w: format %s: %v", ErrFormat, raw, err)
		}
		if s == "json" {
			return JSON(), nil
		}
		return nil, fmt.Errorf("%w: format %q: use \"json\" or a JSON schema object", ErrFormat, s)
	case raw[0] == '{':
		return Schema(ctx, raw)
	}
	return nil, fmt.Errorf("%w: format %.40s: use \"json\" or a JSON schema object", ErrFormat, raw)
}

// ResponseFormat compiles OpenAI's response_format: absent or {"type":"text"}
// for no constraint (a nil Grammar), {"type":"json_object"} for any JSON
// object, {"type":"json_schema","json_schema":{"schema":{...}}} for a schema.
func ResponseFormat(ctx context.Context, raw []byte) (*Grammar, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var rf struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	}
	if err := json.Unmarshal(raw, &rf); err != nil {
		return nil, fmt.Errorf("%w: response_format: %v", ErrFormat, err)
	}
	switch rf.Type {
	case "", "text":
		return nil, nil
	case "json_object":
		return JSON(), nil
	case "json_schema":
		if rf.JSONSchema == nil || len(bytes.TrimSpace(rf.JSONSchema.Schema)) == 0 {
			return nil, fmt.Errorf("%w: response_format json_schema needs json_schema.schema", ErrFormat)
		}
		return Schema(ctx, rf.JSONSchema.Schema)
	}
	return nil, fmt.Errorf("%w: response_format type %q: use text, json_object or json_schema", ErrFormat, rf.Type)
}

// builder appends nodes to a pool; the schema compiler and JSON share it.
type builder struct {
	nodes                  []node
	anyIdx, strIdx, keyIdx int32 // memoized: -1 until first asked for
}

func newBuilder() *builder { return &builder{anyIdx: -1, strIdx: -1, keyIdx: -1} }

func (b *builder) add(n node) int32 {
	b.nodes = append(b.nodes, n)
	return int32(len(b.nodes) - 1)
}

// anyValue is any JSON value: an object, array, string, number, true,
// false or null.
func (b *builder) anyValue() int32 {
	if b.anyIdx < 0 {
		b.anyIdx = b.add(node{kind: kAnyOf}) // reserved first: it contains itself
		alts := []int32{
			b.freeObject(b.anyIdx),
			b.add(node{kind: kArray, child: b.anyIdx, max: -1}),
			b.plainString(),
			b.add(node{kind: kNumber}),
			b.literals([][]byte{[]byte("true"), []byte("false"), []byte("null")}),
		}
		b.nodes[b.anyIdx].alts = alts
	}
	return b.anyIdx
}

func (b *builder) plainString() int32 {
	if b.strIdx < 0 {
		b.strIdx = b.add(node{kind: kString, max: -1})
	}
	return b.strIdx
}

func (b *builder) freeObject(value int32) int32 {
	return b.add(node{kind: kObject, free: true, child: value, key: b.anyKey(), lastReq: -1,
		obj: &objInfo{maxP: -1}})
}

// anyKey is any string as the key of an additional property.
func (b *builder) anyKey() int32 {
	if b.keyIdx < 0 {
		d, err := buildDFA(context.Background(), stringSpec{must: []*nfa{anyStringNFA()}, max: -1})
		if err != nil {
			panic(err) // a fixed automaton of a few states
		}
		b.keyIdx = b.add(node{kind: kPattern, dfa: d, isKey: true})
	}
	return b.keyIdx
}

// literals adds a node matching exactly one of lits, sorted and deduplicated
// here (the matcher relies on it: literals sharing a prefix are adjacent).
func (b *builder) literals(lits [][]byte) int32 {
	s := make([][]byte, len(lits))
	copy(s, lits)
	slices.SortFunc(s, bytes.Compare)
	out := s[:0]
	for i, l := range s {
		if i == 0 || !bytes.Equal(l, s[i-1]) {
			out = append(out, l)
		}
	}
	litMin := make([][]int32, len(out))
	for j := len(out) - 1; j >= 0; j-- {
		l := out[j]
		litMin[j] = make([]int32, len(l)+1)
		shared := 0 // bytes shared with the next literal
		if j+1 < len(out) {
			for shared < len(l) && shared < len(out[j+1]) && l[shared] == out[j+1][shared] {
				shared++
			}
		}
		for k := range litMin[j] {
			litMin[j][k] = int32(len(l))
			if j+1 < len(out) && k <= shared {
				litMin[j][k] = min(litMin[j][k], litMin[j+1][k])
			}
		}
	}
	return b.add(node{kind: kLiterals, lits: out, litMin: litMin})
}

// finish wraps root in the document node, computes every node's minimal
// length (charging charge for the work, when not nil) and returns the
// grammar. A document that has no finite value is refused.
func (b *builder) finish(root int32, charge func(int) error) (*Grammar, error) {
	str := b.plainString()
	doc := b.add(node{kind: kDoc, child: root})
	g := &Grammar{nodes: b.nodes, doc: doc, str: str}
	if err := g.settleLengths(charge); err != nil {
		return nil, err
	}
	if g.ml[doc] >= inf {
		return nil, fmt.Errorf("%w: schema: no finite value matches it (a required property, item or "+
			"alternative always leads back to itself, or bounds leave nothing)", ErrFormat)
	}
	return g, nil
}
