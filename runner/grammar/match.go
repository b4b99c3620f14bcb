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
	node int32 // index in Grammar.nodes
	// n counts items, code points, digits, or bytes matched of a key or
	// literal; in a kPattern string it is the automaton's state.
	n int32
	// prop is, in an object, the declared property matched or last written
	// (-1 before any, len(props) once additional ones are written); in
	// literals the first candidate; in a pattern string's \u escape the
	// high hex digit.
	prop  int32
	cnt   int32 // object: properties written or started
	state uint8 // position in the node's syntax, per kind below
	sub   uint8 // a whitespace run (see skipWS), a string's escape / UTF-8 progress, a bounded number's comparisons
}

// thread is one stack: its top frame, the arena index of the frame below
// it (-1 at the document), and below, the bytes the frames below still
// need once the top's value ends (see est.go).
type thread struct {
	top    frame
	parent int32
	below  int32
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
				out = m.step(thread{top: frame{node: a}, parent: t.parent, below: t.below}, b, out)
			}
			return out
		}
		f := t.top
		act, child := reject, int32(0)
		switch nd.kind {
		case kObject:
			var extra bool
			act, child, extra = m.object(&f, nd, b)
			if extra { // the key may also be an additional one
				out = m.extraKey(t, nd, b, out)
			}
		case kArray:
			act = array(&f, nd, b)
			child = nd.child
			if int(f.n) < len(nd.prefix) {
				child = nd.prefix[f.n]
			}
		case kString:
			if str(&f, nd, b) {
				act = consume
			}
		case kPattern:
			if pattern(&f, nd, b) {
				act = consume
			}
		case kNumber:
			if nd.num != nil && nd.num.step(&f, b, nd.integer) || nd.num == nil && number(&f, nd, b) {
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
			return append(out, thread{top: f, parent: t.parent, below: t.below})
		case push:
			t = m.push(t, f, child)
			continue
		}
		// A complete value that cannot take b ends there: its container
		// moves past it and gets b.
		if t.parent < 0 || !m.complete(t.top) {
			return out
		}
		p := m.arena[m.skipRecords(t.parent, t.top)] // a closed object's records end with it
		parent := p.parent
		if pf := p.top; pf.state == oKey && m.g.nodes[pf.node].kind == kObject {
			// an additional key ended: refuse it if written before, else record it
			if m.recorded(parent, t.top.cnt) {
				return out
			}
			m.arena = append(m.arena, thread{top: frame{node: keyRecord, n: t.top.cnt}, parent: parent})
			parent = int32(len(m.arena) - 1)
		}
		t = thread{top: m.childDone(p.top), parent: parent, below: p.below}
	}
}

// push puts container frame f (moved on to a child) on the arena below
// t's place and returns the thread of the child value, not started.
func (m *matcher) push(t thread, f frame, child int32) thread {
	m.arena = append(m.arena, thread{top: f, parent: t.parent, below: t.below})
	below := add(t.below, m.g.rem(m.childDone(f)))
	return thread{top: frame{node: child}, parent: int32(len(m.arena) - 1), below: below}
}

// extraKey steps t, an object at a key's opening quote b, as starting an
// additional property, appending the thread to out if it takes b.
func (m *matcher) extraKey(t thread, nd *node, b byte, out []thread) []thread {
	f := t.top
	f.state, f.sub, f.prop, f.n = oKey, 0, int32(len(nd.props)), 0
	f.cnt++
	return m.step(m.push(t, f, nd.key), b, out)
}

// est is the bytes that end the document from t (inf: it cannot end).
func (m *matcher) est(t thread) int32 {
	e := add(m.g.rem(t.top), t.below)
	f := t.top
	if !m.g.nodes[f.node].isKey || t.parent < 0 {
		return e
	}
	switch {
	case f.state == sClosed && m.recorded(m.arena[t.parent].parent, f.cnt):
		return inf // a key written before
	case f.state == sBody && f.sub == 0 && m.g.nodes[f.node].dfa.accept[f.n] &&
		m.recorded(m.arena[t.parent].parent, f.cnt):
		return add(e, 1) // the key may not end here
	}
	return e
}

// complete reports whether f has matched a whole value.
func (m *matcher) complete(f frame) bool {
	nd := &m.g.nodes[f.node]
	switch nd.kind {
	case kObject:
		return f.state == oClosed
	case kArray:
		return f.state == aClosed
	case kString, kPattern:
		return f.state == sClosed
	case kNumber:
		if nd.num != nil {
			return nd.num.within(f)
		}
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
		f.n = 0
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
	f, p := t.top, m.skipRecords(t.parent, t.top)
	for m.complete(f) {
		if p < 0 {
			return true
		}
		f, p = m.childDone(m.arena[p].top), m.arena[p].parent
		p = m.skipRecords(p, f)
	}
	return false
}

// maxThreads bounds the alternatives held open at once. Schemas nesting
// look-alike anyOf branches could otherwise multiply them by the depth;
// past the bound the newest are dropped, which can only refuse output,
// never allow invalid output.
const maxThreads = 256

// advance steps every thread of ts over b into out, dropping those that
// cannot end (estimate inf: the schema leaves them nothing to finish with)
// and duplicates (alternatives that have converged).
func (m *matcher) advance(ts []thread, b byte, out []thread) []thread {
	for _, t := range ts {
		n := len(out)
		out = m.step(t, b, out)
		for i := n; i < len(out); i++ {
			if t := out[i]; t.below >= inf || m.g.nodes[t.top.node].kind != kString && m.est(t) >= inf {
				// (a plain string can always end: its own part is finite)
				out = append(out[:i], out[i+1:]...)
				i--
				continue
			}
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
// backslash or control character) ts can take when every thread of ts is
// between the characters of a plain string: each such character leaves
// it there again, and does not raise its estimate. far is the largest
// estimate among them. room -1: some thread is elsewhere, or has an
// estimate above limit (limit < 0: none is), so plain text must be
// stepped through.
func (m *matcher) stringRoom(ts []thread, limit int32) (room, far int32) {
	room = -1
	for _, t := range ts {
		f := t.top
		nd := &m.g.nodes[f.node]
		if nd.kind != kString || f.state != sBody || f.sub != 0 {
			return -1, 0
		}
		e := m.est(t)
		if limit >= 0 && e > limit {
			return -1, 0
		}
		far = max(far, e)
		if nd.max < 0 {
			room = 1 << 30
		} else {
			room = max(room, nd.max-f.n)
		}
	}
	return room, far
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

// object steps an object frame. extra is set when b, a key's opening
// quote, may also start an additional property (the caller steps that
// alternative: see extraKey).
func (m *matcher) object(f *frame, nd *node, b byte) (act action, child int32, extra bool) {
	np := int32(len(nd.props))
	switch f.state {
	case oStart:
		if b == '{' {
			f.state, f.prop = oOpen, -1
			return consume, 0, false
		}
	case oOpen, oComma:
		if skipWS(&f.sub, b) {
			return consume, 0, false
		}
		if b == '}' && f.state == oOpen && m.g.canClose(*f, nd) {
			*f = frame{node: f.node, state: oClosed}
			return consume, 0, false
		}
		if b != '"' {
			break
		}
		o := nd.obj
		if o.maxP >= 0 && f.cnt >= o.maxP {
			break
		}
		extra = nd.free && f.prop >= nd.lastReq
		if f.prop == np { // past the declared properties
			f.state, f.sub = oKey, 0
			f.cnt++
			return push, nd.key, false
		}
		if next := f.prop + 1; next < np {
			f.state, f.sub, f.prop, f.n = oKeyLit, 0, next, 1 // every key literal starts with '"'
			f.cnt++
			return consume, 0, extra
		}
		if extra {
			f.state, f.sub, f.prop = oKey, 0, np
			f.cnt++
			return push, nd.key, false
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
				return consume, 0, false
			}
		}
	case oAfterKey:
		if skipWS(&f.sub, b) {
			return consume, 0, false
		}
		if b == ':' {
			f.state, f.sub = oColon, 0
			return consume, 0, false
		}
	case oColon:
		if skipWS(&f.sub, b) {
			return consume, 0, false
		}
		f.state, f.sub = oValue, 0
		if f.prop == np {
			return push, nd.child, false
		}
		return push, nd.props[f.prop].value, false
	case oAfterValue:
		if skipWS(&f.sub, b) {
			return consume, 0, false
		}
		switch {
		case b == ',' && (nd.obj.maxP < 0 || f.cnt < nd.obj.maxP) && (nd.free || f.prop+1 < np):
			f.state, f.sub = oComma, 0
			return consume, 0, false
		case b == '}' && m.g.canClose(*f, nd):
			*f = frame{node: f.node, state: oClosed}
			return consume, 0, false
		}
	}
	return reject, 0, false
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
