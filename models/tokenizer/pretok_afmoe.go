package tokenizer

// Scanners for Arcee Trinity's pre-tokenizer ("afmoe"). Its first stage is
// no regex: llama.cpp names it \p{AFMoE_digits} and splits by hand.

// splitAfmoeDigits is llama.cpp's \p{AFMoE_digits}: each run of \p{N}
// (any number, not only 0-9) is cut into groups of three counted from its
// end, so a run of n digits starts with a group of n%3 when that is not 0
// ("1234567" gives "1", "234", "567"). The text before a run is not cut
// from it: it stays in one piece with the run's first group ("ab 1234"
// gives "ab 1", "234"), as llama.cpp's splitter emits it; the text after
// the last run is a piece of its own.
func splitAfmoeDigits(s string, yield func(string)) {
	gap := 0 // start of the text not yet yielded
	for i := 0; i < len(s); {
		c, n := classAt(s, i)
		if c&isNumber == 0 {
			i += n
			continue
		}
		left := 1 // digits of the run from byte i on
		for end := i + n; end < len(s); left++ {
			c, n := classAt(s, end)
			if c&isNumber == 0 {
				break
			}
			end += n
		}
		// a group ends wherever the digits left are a multiple of three
		for ; left > 0; left-- {
			_, n := classAt(s, i)
			i += n
			if (left-1)%3 == 0 {
				yield(s[gap:i])
				gap = i
			}
		}
	}
	if gap < len(s) {
		yield(s[gap:])
	}
}

// splitAfmoe is [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|
// [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+.
// Unlike the other lists' last regexes it leaves some runes unmatched (a
// number or a control character that no letter follows): they are pieces
// of the text between matches.
func splitAfmoe(s string, yield func(string)) {
	gap := 0 // start of the text not yet yielded
	for i := 0; i < len(s); {
		end := afmoeWordEnd(s, i)
		if end == i {
			_, n := classAt(s, i)
			i += n
			continue
		}
		yieldMatch(s, gap, i, end, yield)
		gap, i = end, end
	}
	if gap < len(s) {
		yield(s[gap:])
	}
}

// afmoeWordEnd returns the end of the splitAfmoe match that starts at byte
// i, or i when none does.
func afmoeWordEnd(s string, i int) int {
	// [!-/:-@[-`{-~][A-Za-z]+: ASCII punctuation and symbols before ASCII letters
	if isASCIIPunct(s[i]) && i+1 < len(s) && isASCIILetter(s[i+1]) {
		end := i + 2
		for end < len(s) && isASCIILetter(s[end]) {
			end++
		}
		return end
	}
	c, n := classAt(s, i)
	// [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+: a mark is in both classes, so
	// either way the run starts at byte i
	if c&(isLetter|isMark) != 0 {
		return runEnd(s, i+n, isLetter|isMark)
	}
	if c&(isNewline|isLetter|isPunct|isSymbol) == 0 && i+n < len(s) {
		if c2, n2 := classAt(s, i+n); c2&(isLetter|isMark) != 0 {
			return runEnd(s, i+n+n2, isLetter|isMark)
		}
	}
	//  ?[\p{P}\p{S}]+[\r\n]*
	j, cj, nj := i, c, n
	if s[i] == ' ' && i+1 < len(s) {
		j = i + 1
		cj, nj = classAt(s, j)
	}
	if cj&(isPunct|isSymbol) != 0 {
		end := runEnd(s, j+nj, isPunct|isSymbol)
		for end < len(s) && (s[end] == '\r' || s[end] == '\n') {
			end++
		}
		return end
	}
	if c&isSpace != 0 {
		return whitespaceEnd(s, i)
	}
	return i
}

// isASCIIPunct reports whether b is one of the 32 ASCII punctuation and
// symbol characters, !-/ :-@ [-` {-~.
func isASCIIPunct(b byte) bool {
	return '!' <= b && b <= '/' || ':' <= b && b <= '@' || '[' <= b && b <= '`' || '{' <= b && b <= '~'
}

func isASCIILetter(b byte) bool { return isLowerASCII(b) || isUpperASCII(b) }
