package grammar

import (
	"regexp/syntax"
	"unicode"
)

// formats are the string formats enforced, as patterns: those of RFC 3339
// (date with the days of each month, February 29 in leap years only; time
// and date-time with seconds 00-59 and a zone), RFC 4122 (uuid), and a
// conservative email address: dot-atoms of letters, digits and _+- at a
// domain of LDH labels of at most 63 characters under a TLD of letters.
// Other formats are annotations, as JSON Schema makes them by default.
var formats = map[string]string{
	"date":      `^` + datePattern + `$`,
	"time":      `^` + timePattern + `$`,
	"date-time": `^` + datePattern + `T` + timePattern + `$`,
	"uuid":      `^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`,
	"email": `^[A-Za-z0-9_+-]+(?:\.[A-Za-z0-9_+-]+)*@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+` +
		`[A-Za-z]{2,63}$`,
}

const (
	leapYear    = `(?:\d\d(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)`
	datePattern = `(?:\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\d|30)|` +
		`02-(?:0[1-9]|1\d|2[0-8]))|` + leapYear + `-02-29)`
	timePattern = `(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d{1,9})?(?:Z|[+-](?:[01]\d|2[0-3]):[0-5]\d)`
)

// patternNFA compiles a pattern with JSON Schema's meaning: found anywhere
// in the string, so any text may come before and after it (its ^ and $
// pin it to the ends).
func patternNFA(p string) (*nfa, error) {
	re, err := parsePattern(p)
	if err != nil {
		return nil, err
	}
	b := &nfaBuilder{a: nfa{states: []nstate{{op: nMatch}}}}
	anyChar := &syntax.Regexp{Op: syntax.OpCharClass, Rune: []rune{0, unicode.MaxRune}}
	tail, err := b.star(anyChar, 0)
	if err != nil {
		return nil, err
	}
	body, err := b.build(re, tail)
	if err != nil {
		return nil, err
	}
	if b.a.start, err = b.star(anyChar, body); err != nil {
		return nil, err
	}
	return &b.a, nil
}

// anyStringNFA matches every string.
func anyStringNFA() *nfa {
	b := &nfaBuilder{a: nfa{states: []nstate{{op: nMatch}}}}
	start, _ := b.star(&syntax.Regexp{Op: syntax.OpCharClass, Rune: []rune{0, unicode.MaxRune}}, 0) // a few states
	b.a.start = start
	return &b.a
}

// literalsNFA matches exactly the given strings.
func literalsNFA(words []string) (*nfa, error) {
	b := &nfaBuilder{a: nfa{states: []nstate{{op: nMatch}}}}
	entry := int32(-1)
	for _, w := range words {
		cur := int32(0)
		for i := len(w) - 1; i >= 0; i-- {
			var err error
			if cur, err = b.add(nstate{op: nByte, lo: w[i], hi: w[i], out: cur}); err != nil {
				return nil, err
			}
		}
		if entry < 0 {
			entry = cur
			continue
		}
		var err error
		if entry, err = b.add(nstate{op: nSplit, out: cur, out1: entry}); err != nil {
			return nil, err
		}
	}
	if entry < 0 {
		entry, _ = b.add(nstate{op: nByte, lo: 1, hi: 0}) // no words: nothing
	}
	b.a.start = entry
	return &b.a, nil
}
