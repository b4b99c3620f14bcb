package grammar

import (
	"fmt"
	"math/big"
	"strings"
)

// A bounded number (minimum, maximum, exclusiveMinimum, exclusiveMaximum)
// is written in decimal without an exponent, at most 16 integer and 16
// fraction digits, and checked exactly as it is written: a digit
// automaton. Its state is where the digits are (the number states of
// scalar.go, n digits in the current part) and, in sub, the sign and how
// the digits so far compare with each bound of that sign's magnitudes
// (less, equal or greater, as strings aligned at the first digit while the
// integer part runs, at the point after it). A byte is taken only if some
// completion of the digits so far stays within the bounds, so the number
// can always be finished; it may end only within them.

// numBounds are the magnitudes a bounded number may have, by sign:
// side[0] for a number written without '-', side[1] with it.
type numBounds struct {
	side [2]magRange
}

// magRange is an interval of magnitudes; an unset lo is 0 (inclusive),
// an unset hi has no limit.
type magRange struct {
	ok     bool // some magnitude is allowed
	lo, hi decBound
}

// decBound is a decimal magnitude: integer digits without leading zeros
// ("0" for none), fraction digits without trailing zeros.
type decBound struct {
	set    bool
	ip, fp string
	strict bool
}

// Comparisons of digits with a bound, two bits each in sub.
const (
	cmpLT = 0
	cmpEQ = 1
	cmpGT = 2

	subNeg = 1 << 4 // sub: the number started with '-'
)

func cmpLo(sub uint8) uint8 { return sub & 3 }
func cmpHi(sub uint8) uint8 { return sub >> 2 & 3 }

// newBounds turns a schema's bounds (nil when absent; inclusive unless
// strict) into magnitude ranges by sign. Integer bounds are rounded to
// the integers within; fraction digits past 16 are rounded inward.
func newBounds(lo, hi *big.Rat, loStrict, hiStrict, integer bool) (*numBounds, error) {
	if integer {
		lo, loStrict = ceilInt(lo, loStrict), false
		hi, hiStrict = floorInt(hi, hiStrict), false
	}
	if lo != nil && hi != nil {
		if c := lo.Cmp(hi); c > 0 || c == 0 && (loStrict || hiStrict) {
			return nil, fmt.Errorf("no number is at once above the minimum %s and below the maximum %s", lo.RatString(), hi.RatString())
		}
	}
	zero := new(big.Rat)
	var b numBounds
	// without '-': magnitudes from max(lo, 0) up to hi
	pos := magRange{ok: hi == nil || hi.Sign() > 0 || hi.Sign() == 0 && !hiStrict}
	if lo != nil && lo.Sign() >= 0 && !(lo.Sign() == 0 && !loStrict) {
		pos.lo = toDec(lo, loStrict, true)
	}
	if hi != nil {
		pos.hi = toDec(hi, hiStrict, false)
	}
	// with '-': magnitudes from max(-hi, 0) up to -lo
	neg := magRange{ok: lo == nil || lo.Sign() < 0 || lo.Sign() == 0 && !loStrict}
	if hi != nil && (hi.Sign() < 0 || hi.Sign() == 0 && hiStrict) {
		neg.lo = toDec(new(big.Rat).Neg(hi), hiStrict, true)
	}
	if lo != nil {
		neg.hi = toDec(new(big.Rat).Sub(zero, lo), loStrict, false)
	}
	b.side = [2]magRange{pos, neg}
	for i := range b.side {
		s := &b.side[i]
		switch {
		case s.lo.set && len(s.lo.ip) > maxIntDigits:
			s.ok = false // no magnitude the grammar writes is that large
		case s.hi.set && len(s.hi.ip) > maxIntDigits:
			s.hi = decBound{} // none exceeds it
		}
	}
	if !b.side[0].ok && !b.side[1].ok {
		return nil, fmt.Errorf("no number of at most %d integer digits is within the bounds", maxIntDigits)
	}
	return &b, nil
}

func ceilInt(x *big.Rat, strict bool) *big.Rat {
	if x == nil {
		return nil
	}
	q := new(big.Int).Div(x.Num(), x.Denom()) // floor (Euclidean division, positive denominator)
	if !x.IsInt() || strict {
		q.Add(q, big.NewInt(1))
	}
	return new(big.Rat).SetInt(q)
}

func floorInt(x *big.Rat, strict bool) *big.Rat {
	if x == nil {
		return nil
	}
	q := new(big.Int).Div(x.Num(), x.Denom())
	if x.IsInt() && strict {
		q.Sub(q, big.NewInt(1))
	}
	return new(big.Rat).SetInt(q)
}

// toDec writes a non-negative magnitude as a decimal bound, rounding a
// 17th fraction digit and beyond up (up) or down, which makes it inclusive.
func toDec(x *big.Rat, strict, up bool) decBound {
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(maxFracDigits), nil)
	num := new(big.Int).Mul(x.Num(), scale)
	q, r := new(big.Int).QuoRem(num, x.Denom(), new(big.Int))
	if r.Sign() != 0 {
		strict = false
		if up {
			q.Add(q, big.NewInt(1))
		}
	}
	s := q.String()
	if len(s) <= maxFracDigits {
		s = strings.Repeat("0", maxFracDigits-len(s)+1) + s
	}
	ip, fp := s[:len(s)-maxFracDigits], strings.TrimRight(s[len(s)-maxFracDigits:], "0")
	return decBound{set: true, ip: ip, fp: fp, strict: strict}
}

// cmpDigit compares digit d at position i of a part with the bound's digit
// there (a missing digit is 0).
func cmpDigit(d byte, part string, i int32) uint8 {
	b := byte('0')
	if int(i) < len(part) {
		b = part[i]
	}
	switch {
	case d < b:
		return cmpLT
	case d > b:
		return cmpGT
	}
	return cmpEQ
}

// intCmp is the comparison of a finished integer part of k digits, whose
// digits compared c with the bound's leading ones.
func intCmp(c uint8, k int32, b *decBound) uint8 {
	switch {
	case k < int32(len(b.ip)):
		return cmpLT
	case k > int32(len(b.ip)):
		return cmpGT
	}
	return c
}

// step advances a bounded number over b. The frame's states are those of
// number; n counts the digits of the part being written.
func (nb *numBounds) step(f *frame, b byte, integer bool) bool {
	digit := b >= '0' && b <= '9'
	side := &nb.side[0]
	if f.sub&subNeg != 0 {
		side = &nb.side[1]
	}
	next := *f
	switch f.state {
	case nStart, nMinus:
		switch {
		case b == '-' && f.state == nStart:
			if !nb.side[1].ok {
				return false
			}
			next.state, next.sub = nMinus, subNeg|cmpEQ|cmpEQ<<2
			*f = next
			return true
		case digit:
			if f.state == nStart {
				side = &nb.side[0]
				next.sub = cmpEQ | cmpEQ<<2
			}
			if !side.ok {
				return false
			}
			next.state, next.n = nInt, 1
			if b == '0' {
				next.state = nZero
			}
			next.sub = next.sub&subNeg | side.digitCmp(next.sub, b, 0, false)
		default:
			return false
		}
	case nZero, nInt:
		switch {
		case digit && f.state == nInt && f.n < maxIntDigits:
			next.n++
			next.sub = f.sub&subNeg | side.digitCmp(f.sub, b, f.n, false)
		case b == '.' && !integer:
			lo, hi := cmpLo(f.sub), cmpHi(f.sub)
			if side.lo.set {
				lo = intCmp(lo, f.n, &side.lo)
			}
			if side.hi.set {
				hi = intCmp(hi, f.n, &side.hi)
			}
			next.state, next.n, next.sub = nDot, 0, f.sub&subNeg|lo|hi<<2
		default:
			return false
		}
	case nDot, nFrac:
		if !digit || f.n >= maxFracDigits {
			return false
		}
		next.state, next.n = nFrac, f.n+1
		next.sub = f.sub&subNeg | side.digitCmp(f.sub, b, f.n, true)
	default:
		return false
	}
	if !side.feasible(next, integer) {
		return false
	}
	*f = next
	return true
}

// digitCmp updates both comparisons for digit d at position i of the
// integer part (frac false) or the fraction. A comparison already
// decided stays; in the integer part, digits past the bound's length keep
// the comparison of its length (the digit count decides at the end).
func (s *magRange) digitCmp(sub uint8, d byte, i int32, frac bool) uint8 {
	lo, hi := cmpLo(sub), cmpHi(sub)
	upd := func(c uint8, b *decBound) uint8 {
		if !b.set || c != cmpEQ {
			return c
		}
		if frac {
			return cmpDigit(d, b.fp, i)
		}
		if int(i) >= len(b.ip) {
			return c
		}
		return cmpDigit(d, b.ip, i)
	}
	return upd(lo, &s.lo) | upd(hi, &s.hi)<<2
}

// allNines reports whether the bound's digits after the first k integer
// digits are all 9 and it has no fraction (frac false), or its fraction
// is sixteen 9s too (frac true): then the largest completion of a prefix
// equal to its first digits equals it.
func allNines(b *decBound, k int32, frac bool) bool {
	if strings.Trim(b.ip[min(int(k), len(b.ip)):], "9") != "" {
		return false
	}
	if frac {
		return b.fp == strings.Repeat("9", maxFracDigits)
	}
	return b.fp == ""
}

// restZero reports whether the bound has nothing but zeros after its
// first k integer digits.
func restZero(b *decBound, k int32) bool {
	return strings.Trim(b.ip[min(int(k), len(b.ip)):], "0") == "" && b.fp == ""
}

// feasible reports whether some completion of f's digits is within s.
func (s *magRange) feasible(f frame, integer bool) bool {
	lo, hi := cmpLo(f.sub), cmpHi(f.sub)
	if f.state == nDot || f.state == nFrac {
		full := f.n >= maxFracDigits
		// the least completion is the digits so far, the greatest
		// them followed by 9s
		hiOK := !s.hi.set || hi == cmpLT || hi == cmpEQ && (!s.hi.strict || int(f.n) < len(s.hi.fp))
		loOK := !s.lo.set || lo == cmpGT || lo == cmpEQ && (!full || !s.lo.strict) && !(full && int(f.n) < len(s.lo.fp))
		return hiOK && loOK
	}
	// integer part of k digits: some length K from k on must fit both
	k, kmax := f.n, int32(maxIntDigits)
	if f.state == nZero {
		kmax = k
	}
	for K := max(k, 1); K <= kmax; K++ {
		hiOK := !s.hi.set || K < int32(len(s.hi.ip)) ||
			K == int32(len(s.hi.ip)) && (hi == cmpLT || hi == cmpEQ && !(s.hi.strict && restZero(&s.hi, k)))
		loOK := !s.lo.set || K > int32(len(s.lo.ip)) ||
			K == int32(len(s.lo.ip)) && (lo == cmpGT || lo == cmpEQ && !(s.lo.strict && allNines(&s.lo, k, !integer)))
		if hiOK && loOK {
			return true
		}
	}
	return false
}

// within reports whether a complete number (its digits all written)
// satisfies the bounds of its sign.
func (nb *numBounds) within(f frame) bool {
	s := &nb.side[0]
	if f.sub&subNeg != 0 {
		s = &nb.side[1]
	}
	lo, hi := cmpLo(f.sub), cmpHi(f.sub)
	var loRest, hiRest bool // the bound has digits past those compared
	switch f.state {
	case nZero, nInt:
		if s.lo.set {
			lo = intCmp(lo, f.n, &s.lo)
			loRest = s.lo.fp != ""
		}
		if s.hi.set {
			hi = intCmp(hi, f.n, &s.hi)
			hiRest = s.hi.fp != ""
		}
	case nFrac:
		loRest, hiRest = int(f.n) < len(s.lo.fp), int(f.n) < len(s.hi.fp)
	default:
		return false
	}
	if lo == cmpEQ && loRest {
		lo = cmpLT
	}
	if hi == cmpEQ && hiRest {
		hi = cmpLT
	}
	loOK := !s.lo.set || lo == cmpGT || lo == cmpEQ && !s.lo.strict
	hiOK := !s.hi.set || hi == cmpLT || hi == cmpEQ && !s.hi.strict
	return loOK && hiOK
}

// rem is a bounded number's estimate: 0 once it may end, else the digit
// places left, which every byte taken uses up.
func (nb *numBounds) rem(f frame, integer bool) int32 {
	frac := int32(0)
	if !integer {
		frac = 1 + maxFracDigits
	}
	switch f.state {
	case nStart:
		return 1 + maxIntDigits + frac
	case nMinus:
		return maxIntDigits + frac
	case nZero, nInt:
		if nb.within(f) {
			return 0
		}
		if f.state == nZero || f.n == maxIntDigits {
			if integer {
				return inf // cannot happen: step refuses a prefix it cannot finish
			}
			return frac
		}
		return maxIntDigits - f.n + frac
	case nDot, nFrac:
		if f.state == nFrac && nb.within(f) {
			return 0
		}
		return maxFracDigits - f.n
	}
	return 0
}
