package grammar

import "bytes"

// The steppers of scalar values: strings, numbers and literals. Each
// advances its frame over one byte and reports whether it took it.

// String states, and the sub-states of sBody.
const (
	sStart = iota // expects '"'
	sBody
	sClosed

	// sub in sBody: 0 between characters; 1..3 continuation bytes
	// (80..BF) still due; the four below restrict the next continuation
	// byte as UTF-8 requires (no overlong forms, surrogates, or > U+10FFFF);
	// then a backslash, then \u's hex digits still due (subHex+k).
	subE0  = 4 // next A0..BF, then 1 more
	subED  = 5 // next 80..9F, then 1 more
	subF0  = 6 // next 90..BF, then 2 more
	subF4  = 7 // next 80..8F, then 2 more
	subEsc = 8
	subHex = 8 // subHex+4 .. subHex+1: hex digits left
)

// Number states. Digit runs are bounded (as llama.cpp's converter bounds
// them) so that a model cannot loop on digits.
const (
	nStart     = iota // expects '-' or a digit
	nMinus            // after '-'
	nZero             // a leading 0: complete
	nInt              // n integer digits: complete
	nDot              // after '.'
	nFrac             // n fraction digits: complete
	nExp              // after 'e'
	nExpSign          // after 'e+' or 'e-'
	nExpDigits        // n exponent digits: complete

	maxIntDigits  = 16
	maxFracDigits = 16
	maxExpDigits  = 3
)

// str steps a string. n counts code points (an escape is one) only when
// the node bounds them, so unbounded strings keep one state throughout.
func str(f *frame, nd *node, b byte) bool {
	switch f.state {
	case sStart:
		if b == '"' {
			f.state = sBody
			return true
		}
		return false
	case sClosed:
		return false
	}
	s := f.sub
	switch {
	case s == 0:
		if b == '"' {
			if f.n < nd.min {
				return false
			}
			*f = frame{node: f.node, state: sClosed}
			return true
		}
		if b < 0x20 || (nd.max >= 0 && f.n >= nd.max) {
			return false // a control character, or one character too many
		}
		switch {
		case b == '\\':
			f.sub = subEsc
		case b < 0x80:
		case b >= 0xC2 && b <= 0xDF:
			f.sub = 1
		case b == 0xE0:
			f.sub = subE0
		case b == 0xED:
			f.sub = subED
		case b >= 0xE1 && b <= 0xEF:
			f.sub = 2
		case b == 0xF0:
			f.sub = subF0
		case b >= 0xF1 && b <= 0xF3:
			f.sub = 3
		case b == 0xF4:
			f.sub = subF4
		default:
			return false
		}
		if nd.min > 0 || nd.max >= 0 {
			f.n++
		}
	case s <= 3:
		if b < 0x80 || b > 0xBF {
			return false
		}
		f.sub--
	case s == subE0, s == subED, s == subF0, s == subF4:
		lo, hi, next := byte(0x80), byte(0xBF), uint8(1)
		switch s {
		case subE0:
			lo = 0xA0
		case subED:
			hi = 0x9F
		case subF0:
			lo, next = 0x90, 2
		case subF4:
			hi, next = 0x8F, 2
		}
		if b < lo || b > hi {
			return false
		}
		f.sub = next
	case s == subEsc:
		switch b {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			f.sub = 0
		case 'u':
			f.sub = subHex + 4
		default:
			return false
		}
	default: // \u hex digits
		if !isHex(b) {
			return false
		}
		if f.sub--; f.sub == subHex {
			f.sub = 0
		}
	}
	return true
}

func isHex(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F'
}

func number(f *frame, nd *node, b byte) bool {
	digit := b >= '0' && b <= '9'
	switch f.state {
	case nStart, nMinus:
		switch {
		case b == '-' && f.state == nStart:
			f.state = nMinus
		case b == '0':
			f.state = nZero
		case digit:
			f.state, f.n = nInt, 1
		default:
			return false
		}
	case nZero, nInt:
		switch {
		case digit && f.state == nInt && f.n < maxIntDigits:
			f.n++
		case nd.integer:
			return false
		case b == '.':
			f.state, f.n = nDot, 0
		case b == 'e' || b == 'E':
			f.state, f.n = nExp, 0
		default:
			return false
		}
	case nDot:
		if !digit {
			return false
		}
		f.state, f.n = nFrac, 1
	case nFrac:
		switch {
		case digit && f.n < maxFracDigits:
			f.n++
		case b == 'e' || b == 'E':
			f.state, f.n = nExp, 0
		default:
			return false
		}
	case nExp, nExpSign:
		switch {
		case (b == '+' || b == '-') && f.state == nExp:
			f.state = nExpSign
		case digit:
			f.state, f.n = nExpDigits, 1
		default:
			return false
		}
	case nExpDigits:
		if !digit || f.n >= maxExpDigits {
			return false
		}
		f.n++
	default:
		return false
	}
	return true
}

// literal steps through the sorted literals: those sharing the n bytes
// read so far are adjacent, from prop on.
func literal(f *frame, nd *node, b byte) bool {
	k, cur := int(f.n), nd.lits[f.prop]
	for j := int(f.prop); j < len(nd.lits); j++ {
		l := nd.lits[j]
		if len(l) < k || !bytes.Equal(l[:k], cur[:k]) {
			break
		}
		if len(l) > k && l[k] == b {
			f.prop, f.n = int32(j), int32(k+1)
			return true
		}
	}
	return false
}

// strRem is a plain string's estimate: the bytes of the character or
// escape under way, the characters minLength still wants, the quote.
func strRem(f frame, nd *node) int32 {
	switch f.state {
	case sStart:
		return 2 + nd.min
	case sClosed:
		return 0
	}
	var pending int32
	switch s := f.sub; {
	case s >= 1 && s <= 3:
		pending = int32(s)
	case s == subE0 || s == subED:
		pending = 2
	case s == subF0 || s == subF4:
		pending = 3
	case s == subEsc:
		pending = 1
	case s > subHex:
		pending = int32(s - subHex)
	}
	return pending + max(0, nd.min-f.n) + 1
}

// numRem is an unbounded number's estimate: a digit where one is due.
func numRem(f frame) int32 {
	switch f.state {
	case nZero, nInt, nFrac, nExpDigits:
		return 0
	}
	return 1
}
