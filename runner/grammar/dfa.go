package grammar

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
)

// dfa is a deterministic automaton over the decoded bytes of a string's
// value: the product of its pattern, its format, the keys it must not be,
// and its length bounds. Every state it keeps can still reach an accepting
// one (dead states are cut out), so a string under it can always be
// finished.
type dfa struct {
	class  [256]uint8 // byte -> its class: bytes of a class behave alike everywhere
	nclass int
	trans  []int32 // state*nclass + class -> the next state; -1: refused
	accept []bool
	// dist is the fewest bytes of JSON string text from a state to an
	// accepting one (a quote or backslash costs 2, a control character 2
	// or 6: its escape), the closing quote not counted.
	dist  []int32
	start int32
}

// maxDFAStates bounds one string's automaton; its table has a row of
// classes per state.
const maxDFAStates = 10_000

// stringSpec is what a string node's automaton must enforce.
type stringSpec struct {
	must    []*nfa // patterns and formats: the value matches each
	mustNot []*nfa // keys the value must not be
	min     int32  // code points, at least
	max     int32  // code points, at most; -1: no limit
}

// jsonWeight is how many bytes of JSON string text spell decoded byte c.
func jsonWeight(c byte) int32 {
	switch {
	case c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
		return 2
	case c < 0x20:
		return 6 // \u00XX
	}
	return 1
}

// closure adds to set (sorted, deduplicated on return) every state reached
// from seeds without reading a byte: through splits, and through nBegin
// when at the start of the string. nEnd states are kept, not passed.
func (a *nfa) closure(seeds []int32, atStart bool, set []int32, seen []bool) []int32 {
	stack := append([]int32(nil), seeds...)
	var visited []int32
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[s] {
			continue
		}
		seen[s] = true
		visited = append(visited, s)
		st := &a.states[s]
		switch st.op {
		case nSplit:
			stack = append(stack, st.out, st.out1)
			continue
		case nBegin:
			if atStart {
				stack = append(stack, st.out)
			}
			continue
		}
		set = append(set, s)
	}
	for _, s := range visited {
		seen[s] = false
	}
	slices.Sort(set)
	return set
}

// accepts reports whether a closed set matches at the end of the string:
// it holds the match state, or an nEnd that leads to it without reading.
func (a *nfa) accepts(set []int32) bool {
	var stack []int32
	seen := map[int32]bool{}
	for _, s := range set {
		if a.states[s].op == nMatch {
			return true
		}
		if a.states[s].op == nEnd {
			stack = append(stack, a.states[s].out)
		}
	}
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[s] {
			continue
		}
		seen[s] = true
		switch st := a.states[s]; st.op {
		case nMatch:
			return true
		case nSplit:
			stack = append(stack, st.out, st.out1)
		case nEnd:
			stack = append(stack, st.out)
		}
	}
	return false
}

// buildDFA determinizes spec by subset construction over the product of
// its automata and a code point counter, then cuts out dead states. It is
// bounded by maxDFAStates and stops when ctx ends.
func buildDFA(ctx context.Context, spec stringSpec) (*dfa, error) {
	parts := append(append([]*nfa(nil), spec.must...), spec.mustNot...)
	d := &dfa{}
	// Classes: cut the byte range at every edge an automaton tests, and
	// where the JSON weight or the code point count changes.
	var cut [257]bool
	for _, c := range []int{0x08, 0x09, 0x0B, 0x0C, 0x0D, 0x0E, 0x20, '"', '"' + 1, '\\', '\\' + 1, 0x80, 0xC0, 256} {
		cut[c] = true
	}
	for _, a := range parts {
		for _, s := range a.states {
			if s.op == nByte && s.lo <= s.hi {
				cut[s.lo], cut[int(s.hi)+1] = true, true
			}
		}
	}
	var rep []byte // a byte of each class
	for c := range 256 {
		if c == 0 || cut[c] {
			rep = append(rep, byte(c))
		}
		d.class[c] = uint8(len(rep) - 1)
	}
	d.nclass = len(rep)

	// A state is each part's set of NFA states and the count, capped where
	// more makes no difference.
	capN := spec.min
	if spec.max >= 0 {
		capN = spec.max
	}
	type dstate struct {
		sets  [][]int32
		count int32
	}
	var states []dstate
	index := map[string]int32{}
	var key []byte
	seen := make([][]bool, len(parts))
	for i, a := range parts {
		seen[i] = make([]bool, len(a.states))
	}
	intern := func(s dstate) (int32, error) {
		key = key[:0]
		for _, set := range s.sets {
			key = binary.AppendUvarint(key, uint64(len(set)))
			for _, x := range set {
				key = binary.AppendUvarint(key, uint64(x))
			}
		}
		key = binary.AppendUvarint(key, uint64(s.count))
		if i, ok := index[string(key)]; ok {
			return i, nil
		}
		if len(states) >= maxDFAStates {
			return 0, fmt.Errorf("its automaton needs more than %d states (with its format, length bounds and the other keys): "+
				"use a simpler pattern or smaller bounds", maxDFAStates)
		}
		if len(states)%256 == 255 {
			if err := ctx.Err(); err != nil {
				return 0, stopped(err)
			}
		}
		i := int32(len(states))
		index[string(key)] = i
		states = append(states, s)
		return i, nil
	}
	first := dstate{sets: make([][]int32, len(parts))}
	for i, a := range parts {
		first.sets[i] = a.closure([]int32{a.start}, true, nil, seen[i])
	}
	start, err := intern(first)
	if err != nil {
		return nil, err
	}
	d.start = start
	var seeds []int32
	for i := 0; i < len(states); i++ { // states grows as the loop runs
		s := states[i]
		ok := s.count >= spec.min
		for j, a := range parts {
			if a.accepts(s.sets[j]) != (j < len(spec.must)) {
				ok = false
			}
		}
		d.accept = append(d.accept, ok)
		for _, b := range rep {
			next := dstate{sets: make([][]int32, len(parts)), count: s.count}
			if b < 0x80 || b >= 0xC0 { // a character starts
				if next.count++; spec.max >= 0 && next.count > spec.max {
					d.trans = append(d.trans, -1)
					continue
				}
				next.count = min(next.count, capN)
			}
			alive := true
			for j, a := range parts {
				seeds = seeds[:0]
				for _, x := range s.sets[j] {
					if st := a.states[x]; st.op == nByte && st.lo <= b && b <= st.hi {
						seeds = append(seeds, st.out)
					}
				}
				next.sets[j] = a.closure(seeds, false, nil, seen[j])
				if len(next.sets[j]) == 0 && j < len(spec.must) {
					alive = false // a pattern can no longer match
					break
				}
			}
			if !alive {
				d.trans = append(d.trans, -1)
				continue
			}
			to, err := intern(next)
			if err != nil {
				return nil, err
			}
			d.trans = append(d.trans, to)
		}
	}
	d.prune(rep)
	if d.dist[d.start] >= inf {
		return nil, fmt.Errorf("no string matches it (with its format, length bounds and the other keys)")
	}
	return d, nil
}

// prune computes dist by a shortest-path search backwards from the
// accepting states (weights 1, 2 or 6: a bucket queue) and refuses every
// transition into a state that cannot reach one.
func (d *dfa) prune(rep []byte) {
	n := len(d.accept)
	d.dist = make([]int32, n)
	into := make([][]int32, n) // reverse edges: state -> the (state*nclass+class) entering it
	for i, to := range d.trans {
		if to >= 0 {
			into[to] = append(into[to], int32(i))
		}
	}
	var buckets [][]int32
	for s := range n {
		d.dist[s] = inf
		if d.accept[s] {
			d.dist[s] = 0
			buckets = pushBucket(buckets, 0, int32(s))
		}
	}
	for dd := 0; dd < len(buckets); dd++ {
		for k := 0; k < len(buckets[dd]); k++ {
			s := buckets[dd][k]
			if d.dist[s] != int32(dd) {
				continue // reached more cheaply before
			}
			for _, e := range into[s] {
				from, c := e/int32(d.nclass), e%int32(d.nclass)
				if nd := int32(dd) + jsonWeight(rep[c]); nd < d.dist[from] {
					d.dist[from] = nd
					buckets = pushBucket(buckets, int(nd), from)
				}
			}
		}
	}
	for i, to := range d.trans {
		if to >= 0 && d.dist[to] >= inf {
			d.trans[i] = -1
		}
	}
}

func pushBucket(b [][]int32, at int, s int32) [][]int32 {
	for len(b) <= at {
		b = append(b, nil)
	}
	b[at] = append(b[at], s)
	return b
}

// next is the state after decoded byte c, -1 if c is refused.
func (d *dfa) next(s int32, c byte) int32 {
	return d.trans[int(s)*d.nclass+int(d.class[c])]
}
