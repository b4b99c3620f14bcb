package grammar

import "bytes"

// The matcher is a pushdown automaton over bytes. Its state is a set of
// threads (more than one only while anyOf alternatives are undecided), each a
// stack of frames: the top frame is held by value in the thread, the frames
// below it are entries of an arena linked by parent index. Arena entries are
// never modified once appended, so threads share their common ancestors and
// a trial step (a candidate token, a walk of the token trie) appends above a
// mark and truncates back to it: no copies, no allocation once warm.
//
// Invariant: an entry's parent index is lower than its own index.

// frame is where the input is in one node's syntax. Fields a kind does not
// use stay zero, so equal states compare equal (the mask cache keys on them).
type frame struct {
	node  int32 // index in Grammar.nodes
	n     int32 // items, code points, digits, or bytes matched of a key or literal
	prop  int32 // object: the property matched or last emitted (-1 before any); literals: the first candidate
	state uint8 // position in the node's syntax, per kind below
	sub   uint8 // a whitespace run (see skipWS), or a string's escape / UTF-8 progress
}

// thread is one stack: its top frame and the arena index of the frame
// below it (-1 at the document).
type thread struct {
	top    frame
	parent int32
}

// Object states.
const (
	oStart      = iota // expects '{'
	oOpen              // after '{': whitespace, '}' or a key
	oKey               // free form: the key string is on top of it
	oKeyLit            // declared: matching the key literal of prop, n bytes in
	oAfterKey          // whitespace or ':'
	oColon             // after ':': whitespace or a value
	oValue             // the value is on top of it
	oAfterValue        // whitespace, ',' or '}'
	oComma             // after ',': whitespace or a key
	oClosed
)

// Array states.
const (
	aStart      = iota // expects '['
	aOpen              // after '[': whitespace, ']' or an item
	aValue             // an item is on top of it; n items before it
	aAfterValue        // whitespace, ',' or ']'; n items so far
	aComma             // after ',': whitespace or an item
	aClosed
)

// Document states.
const (
	dStart = iota // leading whitespace, then the root value
	dValue        // the root value is on top of it
	dDone
)

// action is what a frame does with a byte.
type action uint8

const (
	reject  action = iota // not its byte: if complete, its container may take it
	consume               // the frame moved on
	push                  // the frame moved on and a child value starts with the byte
)

// matcher steps threads of one grammar. It owns the arena.
type matcher struct {
	g     *Grammar
	arena []thread
}

// step advances t over b, appending the threads it becomes to out: none if
// b is not allowed, several if an anyOf leaves alternatives open.
func (m *matcher) step(t thread, b byte, out []thread) []thread {
	for {
		nd := &m.g.nodes[t.top.node]
		if nd.kind == kAnyOf { // a value not started yet: try each alternative
			for _, a := range nd.alts {
				out = m.step(thread{top: frame{node: a}, parent: t.parent}, b, out)
			}
			return out
		}
		f := t.top
		act, child := reject, int32(0)
		switch nd.kind {
		case kObject:
			act, child = m.object(&f, nd, b)
		case kArray:
			act = array(&f, nd, b)
			child = nd.child
		case kString:
			if str(&f, nd, b) {
				act = consume
			}
		case kNumber:
			if number(&f, nd, b) {
				act = consume
			}
		case kLiterals:
			if literal(&f, nd, b) {
				act = consume
			}
		case kDoc:
			act = doc(&f, b)
			child = nd.child
		}
		switch act {
		case consume:
			return append(out, thread{top: f, parent: t.parent})
		case push:
			m.arena = append(m.arena, thread{top: f, parent: t.parent})
			t = thread{top: frame{node: child}, parent: int32(len(m.arena) - 1)}
			continue
		}
		// A complete value that cannot take b ends there: its container
		// moves past it and gets b.
		if t.parent < 0 || !m.complete(t.top) {
			return out
		}
		p := m.arena[t.parent]
		t = thread{top: m.childDone(p.top), parent: p.parent}
	}
}

// complete reports whether f has matched a whole value.
func (m *matcher) complete(f frame) bool {
	nd := &m.g.nodes[f.node]
	switch nd.kind {
	case kObject:
		return f.state == oClosed
	case kArray:
		return f.state == aClosed
	case kString:
		return f.state == sClosed
	case kNumber:
		return f.state == nZero || f.state == nInt || f.state == nFrac || f.state == nExpDigits
	case kLiterals:
		return int(f.n) == len(nd.lits[f.prop])
	case kDoc:
		return f.state == dDone
	}
	return false
}

// childDone moves a container past the child value that just ended.
func (m *matcher) childDone(f frame) frame {
	switch m.g.nodes[f.node].kind {
	case kObject:
		if f.state == oKey {
			f.state = oAfterKey
		} else {
			f.state = oAfterValue
		}
	case kArray:
		f.state = aAfterValue
		f.n++
	case kDoc:
		f.state = dDone
	}
	f.sub = 0
	return f
}

// canEnd reports whether t has matched a whole document: every frame on
// its stack is complete once the ones above it end.
func (m *matcher) canEnd(t thread) bool {
	f, p := t.top, t.parent
	for m.complete(f) {
		if p < 0 {
			return true
		}
		f, p = m.childDone(m.arena[p].top), m.arena[p].parent
	}
	return false
}

// maxThreads bounds the alternatives held open at once. Schemas nesting
// look-alike anyOf branches could otherwise multiply them by the depth;
// past the bound the newest are dropped, which can only refuse output,
// never allow invalid output.
const maxThreads = 256

// advance steps every thread of ts over b into out, dropping duplicates
// (alternatives that have converged).
func (m *matcher) advance(ts []thread, b byte, out []thread) []thread {
	for _, t := range ts {
		n := len(out)
		out = m.step(t, b, out)
		for i := n; i < len(out); i++ {
			for j := range i {
				if m.same(out[i], out[j]) {
					out = append(out[:i], out[i+1:]...)
					i--
					break
				}
			}
		}
	}
	if len(out) > maxThreads {
		out = out[:maxThreads]
	}
	return out
}

// stringRoom returns how many more code points of plain text (no quote,
// backslash or control character) one of ts can take: each is a whole
// character that leaves a string between characters again. -1: none of ts
// is between the characters of a string.
func (m *matcher) stringRoom(ts []thread) int32 {
	room := int32(-1)
	for _, t := range ts {
		f := t.top
		if nd := &m.g.nodes[f.node]; nd.kind == kString && f.state == sBody && f.sub == 0 {
			if nd.max < 0 {
				return 1 << 30
			}
			room = max(room, nd.max-f.n)
		}
	}
	return room
}

// same reports whether two threads hold equal stacks.
func (m *matcher) same(a, b thread) bool {
	if a.top != b.top {
		return false
	}
	for i, j := a.parent, b.parent; i != j; i, j = m.arena[i].parent, m.arena[j].parent {
		if i < 0 || j < 0 || m.arena[i].top != m.arena[j].top {
			return false
		}
	}
	return true
}

func doc(f *frame, b byte) action {
	if f.state != dStart {
		return reject // nothing may follow the value
	}
	if skipWS(&f.sub, b) {
		return consume
	}
	f.state, f.sub = dValue, 0
	return push
}

func (m *matcher) object(f *frame, nd *node, b byte) (action, int32) {
	switch f.state {
	case oStart:
		if b == '{' {
			f.state, f.prop = oOpen, -1
			return consume, 0
		}
	case oOpen, oComma:
		if skipWS(&f.sub, b) {
			return consume, 0
		}
		if b == '}' && f.state == oOpen && (nd.free || nd.lastReq < 0) {
			*f = frame{node: f.node, state: oClosed}
			return consume, 0
		}
		if b != '"' {
			break
		}
		f.sub = 0
		if nd.free {
			f.state = oKey
			return push, m.g.str
		}
		if next := f.prop + 1; int(next) < len(nd.props) {
			f.state, f.prop, f.n = oKeyLit, next, 1 // every key literal starts with '"'
			return consume, 0
		}
	case oKeyLit:
		// The candidates are the properties from prop up to its window that
		// share the bytes read so far; prop is the first of them.
		k, cur := int(f.n), nd.props[f.prop].key
		for i := f.prop; i <= nd.props[f.prop].window; i++ {
			key := nd.props[i].key
			if len(key) > k && key[k] == b && bytes.Equal(key[:k], cur[:k]) {
				f.prop, f.n = i, int32(k+1)
				if k+1 == len(key) {
					f.state, f.n = oAfterKey, 0
				}
				return consume, 0
			}
		}
	case oAfterKey:
		if skipWS(&f.sub, b) {
			return consume, 0
		}
		if b == ':' {
			f.state, f.sub = oColon, 0
			return consume, 0
		}
	case oColon:
		if skipWS(&f.sub, b) {
			return consume, 0
		}
		f.state, f.sub = oValue, 0
		if nd.free {
			return push, nd.child
		}
		return push, nd.props[f.prop].value
	case oAfterValue:
		if skipWS(&f.sub, b) {
			return consume, 0
		}
		switch {
		case b == ',' && (nd.free || int(f.prop)+1 < len(nd.props)):
			f.state, f.sub = oComma, 0
			return consume, 0
		case b == '}' && (nd.free || f.prop >= nd.lastReq):
			*f = frame{node: f.node, state: oClosed}
			return consume, 0
		}
	}
	return reject, 0
}

func array(f *frame, nd *node, b byte) action {
	switch f.state {
	case aStart:
		if b == '[' {
			f.state = aOpen
			return consume
		}
	case aOpen, aComma:
		if skipWS(&f.sub, b) {
			return consume
		}
		if b == ']' && f.state == aOpen && nd.min == 0 {
			*f = frame{node: f.node, state: aClosed}
			return consume
		}
		if f.state == aOpen && nd.max == 0 {
			break
		}
		f.state, f.sub = aValue, 0
		return push
	case aAfterValue:
		if skipWS(&f.sub, b) {
			return consume
		}
		switch {
		case b == ',' && (nd.max < 0 || f.n < nd.max):
			f.state, f.sub = aComma, 0
			return consume
		case b == ']' && f.n >= nd.min:
			*f = frame{node: f.node, state: aClosed}
			return consume
		}
	}
	return reject
}
