package grammar

// A kPattern string is JSON string text whose value (its UTF-8 after
// escapes are undone) an automaton accepts: a pattern, a format, the keys
// an additional property must not be, with the length bounds folded in.
// The frame's n is the automaton's state. Characters are written as
// themselves except those JSON must escape: \" \\ \b \f \n \r \t, and
// \u00XX for the other control characters; nothing else is escaped.

// Escape progress in sub, past subEsc: \u, \u0, \u00 read, then \u00X
// with X (0 or 1) in prop.
const (
	subU    = 16 + iota // after \u: expects 0
	subU0               // after \u0: expects 0
	subU00              // after \u00: expects 0 or 1
	subU00X             // after \u00X: expects a hex digit
)

// unescape is the byte a one-letter escape stands for, 0 if none.
func unescape(b byte) byte {
	switch b {
	case '"', '\\':
		return b
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	}
	return 0
}

func pattern(f *frame, nd *node, b byte) bool {
	d := nd.dfa
	switch f.state {
	case sStart:
		if b == '"' {
			f.state, f.n = sBody, d.start
			if nd.isKey {
				f.cnt = fnvOffset
			}
			return true
		}
		return false
	case sClosed:
		return false
	}
	feed := func(c byte) bool {
		s := d.next(f.n, c)
		if s < 0 {
			return false
		}
		f.n, f.sub, f.prop = s, 0, 0
		if nd.isKey {
			f.cnt = fnvStep(f.cnt, c)
		}
		return true
	}
	switch f.sub {
	case 0:
		switch {
		case b == '"':
			if !d.accept[f.n] {
				return false
			}
			*f = frame{node: f.node, state: sClosed, cnt: f.cnt} // a key keeps its hash
			return true
		case b == '\\':
			f.sub = subEsc
			return true
		case b < 0x20:
			return false
		}
		return feed(b)
	case subEsc:
		if b == 'u' {
			f.sub = subU
			return true
		}
		c := unescape(b)
		return c != 0 && feed(c)
	case subU, subU0:
		if b != '0' {
			return false
		}
		f.sub++
		return true
	case subU00:
		if b != '0' && b != '1' {
			return false
		}
		f.sub, f.prop = subU00X, int32(b-'0')
		return true
	case subU00X:
		if !isHex(b) {
			return false
		}
		return feed(byte(f.prop)<<4 | hexVal(b))
	}
	return false
}

func hexVal(b byte) byte {
	switch {
	case b <= '9':
		return b - '0'
	case b >= 'a':
		return b - 'a' + 10
	}
	return b - 'A' + 10
}

// patRem is a pattern string's estimate: the escape under way, the
// automaton's distance to acceptance from where it leads, the quote.
func patRem(f frame, nd *node) int32 {
	d := nd.dfa
	switch f.state {
	case sStart:
		return add(2, d.dist[d.start])
	case sClosed:
		return 0
	}
	// best is the least of pending bytes + the distance after decoded
	// byte c, over the c that the escape can still become.
	best := inf
	try := func(pending int32, c byte) {
		if s := d.next(f.n, c); s >= 0 {
			best = min(best, add(pending, d.dist[s]))
		}
	}
	switch f.sub {
	case 0:
		return add(d.dist[f.n], 1)
	case subEsc:
		for _, e := range []byte(`"\bfnrt`) {
			try(1, unescape(e))
		}
		for c := range byte(0x20) {
			try(5, c)
		}
	case subU, subU0, subU00:
		for c := range byte(0x20) {
			try(int32(subU00X-f.sub)+1, c)
		}
	case subU00X:
		for h := range byte(16) {
			try(1, byte(f.prop)<<4|h)
		}
	}
	return add(best, 1)
}
