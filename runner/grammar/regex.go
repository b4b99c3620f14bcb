package grammar

import (
	"errors"
	"fmt"
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Patterns are JSON Schema's regular expressions (ECMA-262), in the subset
// schemas use: literals, classes, the escapes \d \w \s \D \W \S and \uXXXX,
// the quantifiers * + ? {m,n} (lazy or not: the same strings), groups
// (plain, non-capturing, named), alternation, and the anchors ^ and $.
// Lookarounds, backreferences and \b cannot be enforced and are refused.
// So are the constructs of other dialects that ECMA-262 reads otherwise or
// not at all, saying what to write: escaped letters it gives no meaning
// (\A and \z, anchors elsewhere; \p{...}; \e), \x{41}, inline flags
// such as (?i), and POSIX classes ([:alpha:]); a [ in a class is a literal.
//
// A pattern is searched for, as JSON Schema says: "^a" matches any string
// that starts with a. llama.cpp's converter takes only patterns written
// "^...$" (its anchors), which mean the whole string here too.
//
// The text is rewritten into Go's syntax (RE2, whose parse tree the
// standard library gives) where the dialects differ: ECMA's \s and . are
// wider or narrower than RE2's, \u and identity escapes are spelled
// otherwise. The tree is then compiled to an automaton over the bytes of
// the string's UTF-8 (nfa), which dfa.go determinizes.

// Limits on a pattern; past one the schema is refused naming it.
const (
	maxPatternLen = 2000   // bytes of one pattern
	maxNFAStates  = 20_000 // one pattern's automaton before determinizing
)

// ecmaSpace is ECMA-262's \s: WhiteSpace and LineTerminator, as class ranges.
const ecmaSpace = `\t\n\v\f\r \x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}\x{feff}`

// ecmaToRE2 rewrites an ECMA-262 pattern (without flags) into RE2 syntax of
// the same meaning, or says which construct it cannot take.
func ecmaToRE2(p string) (string, error) {
	var b strings.Builder
	inClass := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\':
			if i+1 == len(p) {
				return "", errors.New("it ends with a lone backslash")
			}
			i++
			e := p[i]
			switch {
			case e == 's':
				if inClass {
					b.WriteString(ecmaSpace)
				} else {
					b.WriteString("[" + ecmaSpace + "]")
				}
			case e == 'S':
				if inClass {
					return "", errors.New(`\S inside a character class is not supported`)
				}
				b.WriteString("[^" + ecmaSpace + "]")
			case e == 'u':
				if i+4 >= len(p) || !isHex(p[i+1]) || !isHex(p[i+2]) || !isHex(p[i+3]) || !isHex(p[i+4]) {
					return "", errors.New(`\u must be followed by four hex digits`)
				}
				fmt.Fprintf(&b, `\x{%s}`, p[i+1:i+5])
				i += 4
			case e == 'c' && i+1 < len(p) && (p[i+1]|0x20 >= 'a' && p[i+1]|0x20 <= 'z'):
				fmt.Fprintf(&b, `\x{%x}`, p[i+1]%32)
				i++
			case e == '0' && (i+1 == len(p) || p[i+1] < '0' || p[i+1] > '9'):
				b.WriteString(`\x{0}`)
			case e >= '1' && e <= '9':
				return "", errors.New("backreferences cannot be enforced")
			case e == 'b' && inClass:
				b.WriteString(`\x{8}`) // a backspace, in a class
			case e == 'b' || e == 'B':
				return "", errors.New(`word boundaries (\b, \B) cannot be enforced`)
			case e == 'x':
				if i+2 >= len(p) || !isHex(p[i+1]) || !isHex(p[i+2]) {
					return "", errors.New(`\x must be followed by two hex digits (\u and four for more)`)
				}
				fmt.Fprintf(&b, `\x{%s}`, p[i+1:i+3])
				i += 2
			case strings.IndexByte("dDwWnrtfv", e) >= 0:
				b.WriteByte('\\')
				b.WriteByte(e)
			case e == 'A' || e == 'z' || e == 'Z' || e == 'G':
				// the letter in ECMA-262's old dialect, an anchor in Perl's,
				// Python's and RE2's, a syntax error with the u flag: a
				// schema that has one means an anchor, so say how to write it
				return "", fmt.Errorf(`\%c is not an anchor in JSON Schema's regular expressions (ECMA-262): write ^ for the start, $ for the end`, e)
			case e == 'p' || e == 'P':
				return "", fmt.Errorf(`property escapes such as \%c{L} (Unicode classes) are not supported: write the characters as a class, such as [a-zA-Z\u00c0-\u024f]`, e)
			case e == 'k':
				return "", errors.New("backreferences cannot be enforced")
			case e >= 'a' && e <= 'z' || e >= 'A' && e <= 'Z':
				// ECMA-262 with the u flag, as JSON Schema validators run
				// patterns, refuses escaped letters it gives no meaning
				return "", fmt.Errorf(`\%c is not an escape of ECMA-262: write the letter %c without the backslash`, e, e)
			case e >= 0x80:
				b.WriteByte(e) // an identity escape of a non-ASCII character: the character
			default:
				b.WriteByte('\\')
				b.WriteByte(e)
			}
		case c == '[' && !inClass:
			// ECMA's [] matches nothing and [^] anything; in RE2 a ] right
			// after [ or [^ is a literal.
			switch {
			case strings.HasPrefix(p[i:], "[]"):
				return "", errors.New("the class [] matches nothing")
			case strings.HasPrefix(p[i:], "[^]"):
				b.WriteString(`[\x{0}-\x{10ffff}]`)
				i += 2
				continue
			}
			inClass = true
			b.WriteByte(c)
		case c == '[' && inClass:
			if posixClass(p[i:]) {
				return "", errors.New("POSIX classes such as [:alpha:] are not ECMA-262's: write the ranges, such as a-zA-Z")
			}
			b.WriteString(`\[`) // a literal in ECMA; RE2 would read [:alpha:] as a class
		case c == '(' && !inClass && strings.HasPrefix(p[i:], "(?") && (i+2 == len(p) || strings.IndexByte(":<=!", p[i+2]) < 0):
			return "", errors.New("(? must begin a group (?:...), (?<name>...) or a lookaround: inline flags such as (?i) are not ECMA-262's")
		case c == ']' && inClass:
			inClass = false
			b.WriteByte(c)
		case c == '.' && !inClass:
			b.WriteString(`[^\n\r\x{2028}\x{2029}]`) // ECMA's line terminators
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// posixClass says whether s starts with a POSIX class, "[:name:]".
func posixClass(s string) bool {
	if !strings.HasPrefix(s, "[:") {
		return false
	}
	n := strings.IndexFunc(s[2:], func(r rune) bool { return r < 'a' || r > 'z' })
	return n > 0 && strings.HasPrefix(s[2+n:], ":]")
}

// parsePattern checks a pattern's size and parses it.
func parsePattern(p string) (*syntax.Regexp, error) {
	if len(p) > maxPatternLen {
		return nil, fmt.Errorf("it is %d bytes long, more than the %d a pattern may have", len(p), maxPatternLen)
	}
	if !utf8.ValidString(p) {
		return nil, errors.New("it is not valid UTF-8")
	}
	re2, err := ecmaToRE2(p)
	if err != nil {
		return nil, err
	}
	re, err := syntax.Parse(re2, syntax.Perl)
	if err != nil {
		if e, ok := err.(*syntax.Error); ok {
			return nil, fmt.Errorf("%s: %s", e.Code, e.Expr) // without RE2's own spelling of the text
		}
		return nil, err
	}
	return re, nil
}

// nfa is a Thompson automaton over bytes. State 0 is the match state.
type nfa struct {
	states []nstate
	start  int32
}

// NFA state kinds.
const (
	nMatch uint8 = iota
	nByte        // a byte in lo..hi, then out
	nSplit       // out and out1, reading nothing
	nBegin       // only at the start of the string, then out
	nEnd         // only at the end of the string, then out
)

type nstate struct {
	op        uint8
	lo, hi    byte
	out, out1 int32
}

// nfaBuilder compiles a parse tree, counting states against the limit.
type nfaBuilder struct {
	a nfa
}

func (b *nfaBuilder) add(s nstate) (int32, error) {
	if len(b.a.states) >= maxNFAStates {
		return 0, fmt.Errorf("its automaton needs more than %d states: use smaller repetition counts", maxNFAStates)
	}
	b.a.states = append(b.a.states, s)
	return int32(len(b.a.states) - 1), nil
}

// build compiles re so that it continues to next, returning its entry state.
func (b *nfaBuilder) build(re *syntax.Regexp, next int32) (int32, error) {
	switch re.Op {
	case syntax.OpNoMatch:
		return b.add(nstate{op: nByte, lo: 1, hi: 0, out: next}) // an empty range: never
	case syntax.OpEmptyMatch:
		return next, nil
	case syntax.OpLiteral:
		var err error
		for i := len(re.Rune) - 1; i >= 0 && err == nil; i-- {
			r := re.Rune[i]
			ranges := []rune{r, r}
			if re.Flags&syntax.FoldCase != 0 {
				ranges = foldRanges(r)
			}
			next, err = b.class(ranges, next)
		}
		return next, err
	case syntax.OpCharClass:
		return b.class(re.Rune, next)
	case syntax.OpAnyCharNotNL:
		return b.class([]rune{0, '\n' - 1, '\n' + 1, unicode.MaxRune}, next)
	case syntax.OpAnyChar:
		return b.class([]rune{0, unicode.MaxRune}, next)
	case syntax.OpBeginText:
		return b.add(nstate{op: nBegin, out: next})
	case syntax.OpEndText:
		return b.add(nstate{op: nEnd, out: next})
	case syntax.OpCapture:
		return b.build(re.Sub[0], next)
	case syntax.OpConcat:
		var err error
		for i := len(re.Sub) - 1; i >= 0 && err == nil; i-- {
			next, err = b.build(re.Sub[i], next)
		}
		return next, err
	case syntax.OpAlternate:
		entry, err := b.build(re.Sub[len(re.Sub)-1], next)
		for i := len(re.Sub) - 2; i >= 0 && err == nil; i-- {
			var alt int32
			if alt, err = b.build(re.Sub[i], next); err == nil {
				entry, err = b.add(nstate{op: nSplit, out: alt, out1: entry})
			}
		}
		return entry, err
	case syntax.OpStar:
		return b.star(re.Sub[0], next)
	case syntax.OpPlus:
		return b.repeat(re.Sub[0], 1, -1, next)
	case syntax.OpQuest:
		return b.repeat(re.Sub[0], 0, 1, next)
	case syntax.OpRepeat:
		return b.repeat(re.Sub[0], re.Min, re.Max, next)
	case syntax.OpBeginLine, syntax.OpEndLine:
		return 0, errors.New("multi-line anchors are not supported")
	case syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return 0, errors.New(`word boundaries (\b, \B) cannot be enforced`)
	}
	return 0, fmt.Errorf("the construct %v is not supported", re)
}

// star compiles sub* continuing to next: a split that loops through sub.
func (b *nfaBuilder) star(sub *syntax.Regexp, next int32) (int32, error) {
	s, err := b.add(nstate{op: nSplit, out1: next})
	if err != nil {
		return 0, err
	}
	body, err := b.build(sub, s)
	if err != nil {
		return 0, err
	}
	b.a.states[s].out = body
	return s, nil
}

// repeat compiles sub{lo,hi} (hi -1: no limit) continuing to next: lo
// copies, then sub* or hi-lo nested optional copies.
func (b *nfaBuilder) repeat(sub *syntax.Regexp, lo, hi int, next int32) (int32, error) {
	cur, err := next, error(nil)
	if hi < 0 {
		cur, err = b.star(sub, next)
	} else {
		for range hi - lo {
			var body int32
			if body, err = b.build(sub, cur); err != nil {
				return 0, err
			}
			if cur, err = b.add(nstate{op: nSplit, out: body, out1: next}); err != nil {
				return 0, err
			}
		}
	}
	for range lo {
		if err != nil {
			break
		}
		cur, err = b.build(sub, cur)
	}
	return cur, err
}

// class compiles a set of code points (pairs of inclusive bounds) to the
// byte sequences of their UTF-8, surrogates excluded, as alternatives.
func (b *nfaBuilder) class(ranges []rune, next int32) (int32, error) {
	var seqs [][]byteRange
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := ranges[i], min(ranges[i+1], unicode.MaxRune)
		if lo <= 0xD7FF && hi >= 0xD800 { // cut out the surrogates
			seqs = utf8Seqs(lo, 0xD7FF, seqs)
			lo = 0xE000
		} else if lo >= 0xD800 && lo <= 0xDFFF {
			lo = 0xE000
		}
		if lo <= hi {
			seqs = utf8Seqs(lo, hi, seqs)
		}
	}
	if len(seqs) == 0 {
		return b.add(nstate{op: nByte, lo: 1, hi: 0, out: next})
	}
	entry := int32(-1)
	for i := len(seqs) - 1; i >= 0; i-- {
		cur := next
		for j := len(seqs[i]) - 1; j >= 0; j-- {
			r := seqs[i][j]
			var err error
			if cur, err = b.add(nstate{op: nByte, lo: r.lo, hi: r.hi, out: cur}); err != nil {
				return 0, err
			}
		}
		if entry < 0 {
			entry = cur
			continue
		}
		var err error
		if entry, err = b.add(nstate{op: nSplit, out: cur, out1: entry}); err != nil {
			return 0, err
		}
	}
	return entry, nil
}

// foldRanges is the class of r and the runes that equal it case-insensitively.
func foldRanges(r rune) []rune {
	out := []rune{r, r}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		out = append(out, f, f)
	}
	return out
}

type byteRange struct{ lo, hi byte }

// utf8Seqs appends the byte-range sequences whose concatenations are
// exactly the UTF-8 encodings of lo..hi (no surrogates inside). Split the
// range until lo and hi encode to the same length and differ only in a
// run of trailing bytes that spans full continuation ranges; then each
// byte position is a range.
func utf8Seqs(lo, hi rune, out [][]byteRange) [][]byteRange {
	for _, edge := range []rune{0x7F, 0x7FF, 0xFFFF} { // the last code point of each length
		if lo <= edge && hi > edge {
			out = utf8Seqs(lo, edge, out)
			return utf8Seqs(edge+1, hi, out)
		}
	}
	n := utf8.RuneLen(lo)
	for i := 1; i < n; i++ {
		m := rune(1)<<(6*i) - 1 // the bits of the last i bytes
		if lo&^m != hi&^m {
			if lo&m != 0 {
				out = utf8Seqs(lo, lo|m, out)
				return utf8Seqs((lo|m)+1, hi, out)
			}
			if hi&m != m {
				out = utf8Seqs(lo, hi&^m-1, out)
				return utf8Seqs(hi&^m, hi, out)
			}
		}
	}
	var a, z [utf8.UTFMax]byte
	utf8.EncodeRune(a[:], lo)
	utf8.EncodeRune(z[:], hi)
	seq := make([]byteRange, n)
	for i := range n {
		seq[i] = byteRange{a[i], z[i]}
	}
	return append(out, seq)
}
