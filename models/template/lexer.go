package template

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The lexer follows jinja2 3.1's, configured as transformers configures it:
// trim_blocks (the newline after a block or comment tag is dropped),
// lstrip_blocks (spaces and tabs before a block or comment tag on its own
// line are dropped), "-" and "+" whitespace control, and the template's final
// newline dropped (keep_trailing_newline off). Inside a tag an end marker
// counts only where brackets are balanced, so {{ {'a': {'b': 1}} }} works.

type tokKind uint8

const (
	tData tokKind = iota
	tVarBegin
	tVarEnd
	tBlockBegin
	tBlockEnd
	tName
	tString
	tInt
	tFloat
	tOp
	tEOF
)

type token struct {
	kind tokKind
	val  string // data, name, string value, operator, or literal text of a number
	num  Value  // int64 or float64 for tInt and tFloat
	line int
}

func syntaxErrorf(line int, format string, args ...any) *Error {
	return &Error{Msg: fmt.Sprintf(format, args...), Line: line, kind: ErrSyntax}
}

type lexer struct {
	src  string
	pos  int
	line int
	toks []token
}

// normalizeSource turns \r\n and \r into \n and drops one final newline.
func normalizeSource(src string) string {
	if strings.IndexByte(src, '\r') >= 0 {
		src = strings.ReplaceAll(src, "\r\n", "\n")
		src = strings.ReplaceAll(src, "\r", "\n")
	}
	return strings.TrimSuffix(src, "\n")
}

func lex(src string) ([]token, error) {
	l := &lexer{src: normalizeSource(src), line: 1}
	if err := l.run(); err != nil {
		return nil, err
	}
	l.toks = append(l.toks, token{kind: tEOF, line: l.line})
	return l.toks, nil
}

func (l *lexer) emit(kind tokKind, val string) {
	l.toks = append(l.toks, token{kind: kind, val: val, line: l.line})
}

// advance moves to p, counting lines.
func (l *lexer) advance(p int) {
	l.line += strings.Count(l.src[l.pos:p], "\n")
	l.pos = p
}

func (l *lexer) run() error {
	for l.pos < len(l.src) {
		start := nextTag(l.src, l.pos)
		if start < 0 {
			l.emit(tData, l.src[l.pos:])
			l.advance(len(l.src))
			return nil
		}
		kind := l.src[start+1]
		after := start + 2
		sign := byte(0)
		if after < len(l.src) && (l.src[after] == '-' || l.src[after] == '+') {
			sign = l.src[after]
			after++
		}
		rawEnd := -1
		if kind == '%' {
			rawEnd = matchRawBegin(l.src, after)
		}
		text := l.stripBefore(l.src[l.pos:start], sign, kind != '{')
		if text != "" {
			l.emit(tData, text)
		}
		l.advance(start)
		switch {
		case rawEnd >= 0:
			l.advance(rawEnd)
			if err := l.raw(); err != nil {
				return err
			}
		case kind == '#':
			if err := l.comment(after); err != nil {
				return err
			}
		default:
			if err := l.tag(kind, after); err != nil {
				return err
			}
		}
	}
	return nil
}

// stripBefore applies whitespace control to the text before a tag.
func (l *lexer) stripBefore(text string, sign byte, blockOrComment bool) string {
	if sign == '-' {
		return strings.TrimRightFunc(text, isSpace)
	}
	if sign == '+' || !blockOrComment {
		return text
	}
	lineStart := strings.LastIndexByte(text, '\n') + 1
	lineStarting := l.pos == 0 || l.src[l.pos-1] == '\n'
	if lineStart > 0 || lineStarting {
		rest := text[lineStart:]
		if rest != "" && strings.TrimLeftFunc(rest, isSpace) == "" {
			return text[:lineStart]
		}
	}
	return text
}

// nextTag finds the next "{{", "{%" or "{#" at or after pos.
func nextTag(s string, pos int) int {
	for {
		i := strings.IndexByte(s[pos:], '{')
		if i < 0 || pos+i+1 >= len(s) {
			return -1
		}
		pos += i
		if c := s[pos+1]; c == '{' || c == '%' || c == '#' {
			return pos
		}
		pos++
	}
}

func skipSpace(s string, p int) int {
	for p < len(s) {
		r, n := utf8.DecodeRuneInString(s[p:])
		if !isSpace(r) {
			break
		}
		p += n
	}
	return p
}

// matchRawBegin matches `\s*raw\s*(-%}\s*|%})` at p and returns the end.
func matchRawBegin(s string, p int) int {
	p = skipSpace(s, p)
	if !strings.HasPrefix(s[p:], "raw") {
		return -1
	}
	p = skipSpace(s, p+3)
	switch {
	case strings.HasPrefix(s[p:], "-%}"):
		return skipSpace(s, p+3)
	case strings.HasPrefix(s[p:], "%}"):
		return p + 2
	}
	return -1
}

// tagEnd matches the end of a block or comment tag at p ("+%}", "-%}" and
// spaces, "%}" and one newline) and returns where the text after it starts.
func tagEnd(s string, p int, close string) (int, bool) {
	switch {
	case strings.HasPrefix(s[p:], "+"+close):
		return p + 3, true
	case strings.HasPrefix(s[p:], "-"+close):
		return skipSpace(s, p+3), true
	case strings.HasPrefix(s[p:], close):
		p += 2
		if p < len(s) && s[p] == '\n' {
			p++
		}
		return p, true
	}
	return p, false
}

// raw lexes the body of {% raw %} up to its {% endraw %}.
func (l *lexer) raw() error {
	for p := l.pos; ; p++ {
		i := strings.Index(l.src[p:], "{%")
		if i < 0 {
			return syntaxErrorf(l.line, "Missing end of raw directive")
		}
		p += i
		q := p + 2
		sign := byte(0)
		if q < len(l.src) && (l.src[q] == '-' || l.src[q] == '+') {
			sign = l.src[q]
			q++
		}
		q = skipSpace(l.src, q)
		if !strings.HasPrefix(l.src[q:], "endraw") {
			continue
		}
		end, ok := tagEnd(l.src, skipSpace(l.src, q+6), "%}")
		if !ok {
			continue
		}
		if text := l.stripBefore(l.src[l.pos:p], sign, true); text != "" {
			l.emit(tData, text)
		}
		l.advance(end)
		return nil
	}
}

// comment skips a comment whose text starts at p.
func (l *lexer) comment(p int) error {
	i := strings.Index(l.src[p:], "#}")
	if i < 0 {
		return syntaxErrorf(l.line, "Missing end of comment tag")
	}
	k := p + i
	if k > p && (l.src[k-1] == '-' || l.src[k-1] == '+') {
		k--
	}
	end, _ := tagEnd(l.src, k, "#}")
	l.advance(end)
	return nil
}

// operators, longest first.
var operators = []string{"//", "**", "==", "!=", ">=", "<=",
	"+", "-", "/", "*", "%", "~", "[", "]", "(", ")", "{", "}",
	">", "<", "=", ".", ":", "|", ",", ";"}

// tag lexes the inside of {{ ... }} or {% ... %} starting at p.
func (l *lexer) tag(kind byte, p int) error {
	begin, end, close := tVarBegin, tVarEnd, "}}"
	if kind == '%' {
		begin, end, close = tBlockBegin, tBlockEnd, "%}"
	}
	l.emit(begin, "")
	l.advance(p)
	var balance []byte
	s := l.src
	for {
		l.advance(skipSpace(s, l.pos))
		p := l.pos
		if p >= len(s) {
			return syntaxErrorf(l.line, "unexpected end of template, expected end of tag")
		}
		if len(balance) == 0 {
			if kind == '%' {
				if q, ok := tagEnd(s, p, close); ok {
					l.emit(end, "")
					l.advance(q)
					return nil
				}
			} else if strings.HasPrefix(s[p:], "-}}") {
				l.emit(end, "")
				l.advance(skipSpace(s, p+3))
				return nil
			} else if strings.HasPrefix(s[p:], "}}") {
				l.emit(end, "")
				l.advance(p + 2)
				return nil
			}
		}
		c := s[p]
		switch {
		case c >= '0' && c <= '9':
			if err := l.number(); err != nil {
				return err
			}
		case c == '\'' || c == '"':
			if err := l.str(c); err != nil {
				return err
			}
		case c == '_' || c >= utf8.RuneSelf || unicode.IsLetter(rune(c)):
			q := p
			for q < len(s) {
				r, n := utf8.DecodeRuneInString(s[q:])
				if !(r == '_' || unicode.IsLetter(r) || (q > p && (unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r)))) {
					break
				}
				q += n
			}
			if q == p {
				return syntaxErrorf(l.line, "unexpected char %s at %d", reprString(string(decodeRune(s[p:]))), p)
			}
			l.emit(tName, s[p:q])
			l.advance(q)
		default:
			op := ""
			for _, o := range operators {
				if strings.HasPrefix(s[p:], o) {
					op = o
					break
				}
			}
			if op == "" {
				return syntaxErrorf(l.line, "unexpected char %s at %d", reprString(string(decodeRune(s[p:]))), p)
			}
			switch op {
			case "(", "[", "{":
				balance = append(balance, map[string]byte{"(": ')', "[": ']', "{": '}'}[op])
			case ")", "]", "}":
				if len(balance) == 0 {
					return syntaxErrorf(l.line, "unexpected '%s'", op)
				}
				if want := balance[len(balance)-1]; want != op[0] {
					return syntaxErrorf(l.line, "unexpected '%s', expected '%c'", op, want)
				}
				balance = balance[:len(balance)-1]
			}
			l.emit(tOp, op)
			l.advance(p + len(op))
		}
	}
}

func decodeRune(s string) rune {
	r, _ := utf8.DecodeRuneInString(s)
	return r
}

// digits matches (\d+_)*\d+ at p.
func digits(s string, p int) int {
	q := p
	for {
		d := q
		for d < len(s) && s[d] >= '0' && s[d] <= '9' {
			d++
		}
		if d == q {
			return q
		}
		q = d
		if q+1 < len(s) && s[q] == '_' && s[q+1] >= '0' && s[q+1] <= '9' {
			q++
			continue
		}
		return q
	}
}

// number lexes a float (digits with a fraction and/or exponent) or an int
// (decimal; 0b, 0o and 0x prefixes).
func (l *lexer) number() error {
	s, p := l.src, l.pos
	q := digits(s, p)
	isFloat := false
	if q+1 < len(s) && s[q] == '.' && s[q+1] >= '0' && s[q+1] <= '9' && (p == 0 || s[p-1] != '.') {
		q = digits(s, q+1)
		isFloat = true
	}
	if q < len(s) && (s[q] == 'e' || s[q] == 'E') {
		r := q + 1
		if r < len(s) && (s[r] == '+' || s[r] == '-') {
			r++
		}
		if e := digits(s, r); e > r {
			q, isFloat = e, true
		}
	}
	if isFloat {
		f, err := strconv.ParseFloat(strings.ReplaceAll(s[p:q], "_", ""), 64)
		if err != nil && f == 0 {
			return syntaxErrorf(l.line, "bad float %s", s[p:q])
		}
		l.toks = append(l.toks, token{kind: tFloat, val: s[p:q], num: f, line: l.line})
		l.advance(q)
		return nil
	}
	if s[p] == '0' && p+1 < len(s) && strings.ContainsRune("bBoOxX", rune(s[p+1])) {
		q = p + 2
		for q < len(s) && (s[q] == '_' || isHex(s[q])) {
			q++
		}
	} else if s[p] == '0' {
		q = p + 1
		for q < len(s) && (s[q] == '0' || (s[q] == '_' && q+1 < len(s) && s[q+1] == '0')) {
			q++
		}
	}
	n, err := strconv.ParseInt(s[p:q], 0, 64)
	if err != nil {
		return syntaxErrorf(l.line, "integer literal %s out of range", s[p:q])
	}
	l.toks = append(l.toks, token{kind: tInt, val: s[p:q], num: n, line: l.line})
	l.advance(q)
	return nil
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// str lexes a quoted string and decodes its escapes as Python's
// "unicode-escape" codec does.
func (l *lexer) str(q byte) error {
	s, p := l.src, l.pos
	i := p + 1
	for ; i < len(s) && s[i] != q; i++ {
		if s[i] == '\\' {
			i++
		}
	}
	if i >= len(s) {
		return syntaxErrorf(l.line, "unexpected char %s at %d", reprString(string(q)), p)
	}
	val, err := unescape(s[p+1 : i])
	if err != nil {
		return syntaxErrorf(l.line, "%s", err.Error())
	}
	l.emit(tString, val)
	l.advance(i + 1)
	return nil
}

func unescape(s string) (string, error) {
	if strings.IndexByte(s, '\\') < 0 {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch c = s[i]; c {
		case '\n':
		case '\\', '\'', '"':
			b.WriteByte(c)
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
			if i+1+n > len(s) {
				return "", fmt.Errorf("truncated \\%cXX escape", c)
			}
			v, err := strconv.ParseUint(s[i+1:i+1+n], 16, 32)
			if err != nil {
				return "", fmt.Errorf("truncated \\%cXX escape", c)
			}
			if v > unicode.MaxRune {
				return "", fmt.Errorf("illegal Unicode character")
			}
			b.WriteRune(rune(v))
			i += n
		case '0', '1', '2', '3', '4', '5', '6', '7':
			v, j := 0, i
			for ; j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7'; j++ {
				v = v*8 + int(s[j]-'0')
			}
			b.WriteRune(rune(v))
			i = j - 1
		default:
			b.WriteByte('\\')
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}
