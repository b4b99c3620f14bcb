package grammar

import "bytes"

// How far the output is from a complete value. Every node has a minimal
// length (minLen: the fewest bytes of a whole value of it); every thread an
// estimate of the bytes still needed to end the document: rem of its top
// frame plus below, the sum its container frames will still need once the
// values above them end (kept in each thread, so the estimate costs O(1)).
//
// The estimate is the length of one completion, so never less than the
// shortest, and it is consistent: from any state short of the end, some
// byte leads to a state whose estimate is at least one less. So a thread
// with a finite estimate can always be finished (the matcher drops the
// others: no dead ends, whatever the schema), and a constraint that allows
// only tokens leaving the estimate within the tokens left (Limit) ends
// within them: every byte has a token of its own in the vocabularies
// models use (byte-level BPE, or SentencePiece's byte fallback).

// inf is the estimate of a state that cannot be completed. Sums saturate
// at it.
const inf int32 = 1 << 29

func sat(x int64) int32 {
	if x >= int64(inf) {
		return inf
	}
	return int32(x)
}

func add(xs ...int32) int32 {
	var s int64
	for _, x := range xs {
		s += int64(x)
	}
	return sat(s)
}

// objInfo is what an object node needs beyond its properties: property
// counts, and sums over its properties' minimal lengths (recomputed while
// minLen settles).
type objInfo struct {
	minP, maxP int32 // minProperties, maxProperties (-1: none)
	// reqSum[i] is the bytes of every required property from i on, each
	// with its comma; reqCnt[i] how many they are.
	reqSum, reqCnt []int32
	// optBefore[i] counts the optional properties before i; optCum[k] is
	// the bytes of the first k optional ones, each with its comma.
	optBefore, optCum []int32
}

// keyCost is the bytes of property i with its value: key, colon, value.
func (g *Grammar) keyCost(nd *node, i int32) int32 {
	p := &nd.props[i]
	return add(int32(len(p.key)), 1, g.ml[p.value])
}

// extraCost is the bytes of the shortest additional property, inf if the
// object takes none.
func (g *Grammar) extraCost(nd *node) int32 {
	if !nd.free {
		return inf
	}
	return add(g.ml[nd.key], 1, g.ml[nd.child])
}

// settle fills an object's sums from the current minimal lengths.
func (g *Grammar) settle(nd *node) {
	o, n := nd.obj, len(nd.props)
	o.reqSum = append(o.reqSum[:0], make([]int32, n+1)...)
	o.reqCnt = append(o.reqCnt[:0], make([]int32, n+1)...)
	o.optBefore = append(o.optBefore[:0], make([]int32, n+1)...)
	o.optCum = append(o.optCum[:0], 0)
	for i := n - 1; i >= 0; i-- {
		o.reqSum[i], o.reqCnt[i] = o.reqSum[i+1], o.reqCnt[i+1]
		if nd.props[i].required {
			o.reqSum[i] = add(o.reqSum[i], g.keyCost(nd, int32(i)), 1)
			o.reqCnt[i]++
		}
	}
	for i := range n {
		o.optBefore[i+1] = o.optBefore[i]
		if !nd.props[i].required {
			o.optBefore[i+1]++
			o.optCum = append(o.optCum, add(o.optCum[len(o.optCum)-1], g.keyCost(nd, int32(i)), 1))
		}
	}
}

// need is the bytes that end an object whose declared properties up to p
// are behind (p -1: none; len(props): past them, taking additional ones)
// and cnt properties written: the required ones left, as many more as
// minProperties wants (the next optional ones, or additional ones), each
// after a comma, and the closing brace.
func (g *Grammar) need(nd *node, p, cnt int32) int32 {
	o := nd.obj
	np := int32(len(nd.props))
	var base, r int32
	if p < np {
		base, r = o.reqSum[p+1], o.reqCnt[p+1]
	}
	if o.maxP >= 0 && cnt+r > o.maxP {
		return inf
	}
	k := o.minP - cnt - r
	if k <= 0 {
		return add(base, 1)
	}
	best := inf
	if p < np {
		if from := o.optBefore[p+1]; int(from+k) < len(o.optCum) {
			best = o.optCum[from+k] - o.optCum[from]
		}
	}
	if x := g.extraCost(nd); x < inf {
		// a byte more for each key but the first: it may have to differ
		// from those written (keys.go)
		margin := int64(k)
		if cnt == 0 {
			margin--
		}
		best = min(best, sat(int64(k)*int64(x+1)+margin))
	}
	return add(base, best, 1)
}

// keyChoices is the fewest bytes that end an object after its next key
// starts, with n bytes of it written: over the declared candidates from
// prop to its window sharing those bytes, and, when extra is set, an
// additional property.
func (g *Grammar) keyChoices(nd *node, prop, n, cnt int32, extra bool) int32 {
	best := inf
	if prop >= 0 && prop < int32(len(nd.props)) {
		cur := nd.props[prop].key
		for j := prop; j <= nd.props[prop].window; j++ {
			key := nd.props[j].key
			if len(key) >= int(n) && bytes.Equal(key[:n], cur[:n]) {
				best = min(best, add(int32(len(key))-n, 1, g.ml[nd.props[j].value], g.need(nd, j, cnt)))
			}
		}
	}
	if extra && nd.free {
		best = min(best, add(g.extraCost(nd), g.need(nd, int32(len(nd.props)), cnt)))
	}
	return best
}

// itemsCost is the bytes of items from..to-1 of an array, each with a comma.
func (g *Grammar) itemsCost(nd *node, from, to int32) int32 {
	var s int64
	for i := from; i < to && i < int32(len(nd.prefix)); i++ {
		s += int64(g.ml[nd.prefix[i]]) + 1
		from = i + 1
	}
	if to > from {
		if nd.child < 0 {
			return inf
		}
		s += int64(to-from) * (int64(g.ml[nd.child]) + 1)
	}
	return sat(s)
}

// rem is the bytes that end frame f's value from where it is; for a
// container whose child is on top, from where it is once the child ends.
func (g *Grammar) rem(f frame) int32 {
	nd := &g.nodes[f.node]
	switch nd.kind {
	case kAnyOf:
		return g.ml[f.node]
	case kDoc:
		if f.state == dStart {
			return g.ml[nd.child]
		}
		return 0
	case kLiterals:
		return nd.litMin[f.prop][f.n] - f.n
	case kString:
		return strRem(f, nd)
	case kPattern:
		return patRem(f, nd)
	case kNumber:
		if nd.num != nil {
			return nd.num.rem(f, nd.integer)
		}
		return numRem(f)
	case kArray:
		return g.arrayRem(f, nd)
	case kObject:
		return g.objectRem(f, nd)
	}
	return inf
}

func (g *Grammar) arrayRem(f frame, nd *node) int32 {
	switch f.state {
	case aStart:
		return g.ml[f.node]
	case aOpen:
		if nd.min == 0 {
			return 1
		}
		return g.itemsCost(nd, 0, nd.min)
	case aComma:
		return g.itemsCost(nd, f.n, max(nd.min, f.n+1))
	case aValue, aAfterValue:
		n := f.n
		if f.state == aValue {
			n++
		}
		if n >= nd.min {
			return 1
		}
		return add(g.itemsCost(nd, n, nd.min), 1)
	}
	return 0
}

func (g *Grammar) objectRem(f frame, nd *node) int32 {
	np := int32(len(nd.props))
	extras := f.prop == np // past the declared properties
	switch f.state {
	case oStart:
		return g.ml[f.node]
	case oOpen:
		if g.canClose(f, nd) {
			return 1
		}
		return g.need(nd, -1, 0) - 1 // the first property has no comma
	case oComma:
		if extras {
			return g.keyChoices(nd, -1, 0, f.cnt+1, true)
		}
		extra := f.prop >= nd.lastReq // additional properties come after the required ones
		if nxt := f.prop + 1; nxt < np {
			return g.keyChoices(nd, nxt, 0, f.cnt+1, extra)
		}
		return g.keyChoices(nd, -1, 0, f.cnt+1, extra)
	case oKeyLit:
		return g.keyChoices(nd, f.prop, f.n, f.cnt, false)
	case oKey, oAfterKey:
		if extras {
			return add(1, g.ml[nd.child], g.need(nd, np, f.cnt))
		}
		return add(1, g.ml[nd.props[f.prop].value], g.need(nd, f.prop, f.cnt))
	case oColon:
		if extras {
			return add(g.ml[nd.child], g.need(nd, np, f.cnt))
		}
		return add(g.ml[nd.props[f.prop].value], g.need(nd, f.prop, f.cnt))
	case oValue, oAfterValue:
		return g.need(nd, f.prop, f.cnt)
	}
	return 0
}

// canClose reports whether a '}' may come now: every required property
// written and minProperties reached.
func (g *Grammar) canClose(f frame, nd *node) bool {
	return f.prop >= nd.lastReq && f.cnt >= nd.obj.minP
}

// settleLengths computes every node's minimal length: a fixpoint, as
// recursive schemas refer to themselves. It starts from inf and lowers
// values pass by pass; each pass charges a step per node.
func (g *Grammar) settleLengths(charge func(int) error) error {
	g.ml = make([]int32, len(g.nodes))
	for i := range g.ml {
		g.ml[i] = inf
	}
	for changed := true; changed; {
		changed = false
		if charge != nil {
			if err := charge(len(g.nodes)); err != nil {
				return err
			}
		}
		for i := range g.nodes {
			nd := &g.nodes[i]
			var v int32
			switch nd.kind {
			case kAnyOf:
				v = inf
				for _, a := range nd.alts {
					v = min(v, g.ml[a])
				}
			case kObject:
				g.settle(nd)
				v = add(1, g.rem(frame{node: int32(i), state: oOpen, prop: -1}))
			case kArray:
				v = add(1, g.rem(frame{node: int32(i), state: aOpen}))
			case kDoc:
				v = g.ml[nd.child]
			case kLiterals:
				v = inf
				for _, l := range nd.lits {
					v = min(v, int32(len(l)))
				}
			default:
				v = g.rem(frame{node: int32(i), state: sStart}) // sStart and nStart are 0
			}
			if v < g.ml[i] {
				g.ml[i], changed = v, true
			}
		}
	}
	for i := range g.nodes {
		if g.nodes[i].kind == kObject {
			g.settle(&g.nodes[i])
		}
	}
	return nil
}
