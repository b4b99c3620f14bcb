package tokenizer

// Scanners for the regexes of the pre-tokenizer lists (pretokenize.go). Each
// yields the regex's matches and the text between them, in order, as
// llama.cpp's unicode_regex_split does.

// splitGPT2 is 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
// (and \s+ for what it leaves: a lone whitespace before non-space).
func splitGPT2(s string, yield func(string)) {
	for i := 0; i < len(s); {
		end := gpt2WordEnd(s, i)
		yield(s[i:end])
		i = end
	}
}

// gpt2WordEnd returns the end of the gpt-2 word that starts at byte i.
func gpt2WordEnd(s string, i int) int {
	b := s[i]
	if b == '\'' && i+1 < len(s) {
		switch s[i+1] {
		case 's', 't', 'm', 'd':
			return i + 2
		case 'r', 'v':
			if i+2 < len(s) && s[i+2] == 'e' {
				return i + 3
			}
		case 'l':
			if i+2 < len(s) && s[i+2] == 'l' {
				return i + 3
			}
		}
	}
	// ' ?' then a run of letters, of numbers, or of anything else but whitespace
	j := i
	if b == ' ' && i+1 < len(s) {
		j = i + 1
	}
	c, n := classAt(s, j)
	switch {
	case c&isLetter != 0:
		return runEnd(s, j+n, isLetter)
	case c&isNumber != 0:
		return runEnd(s, j+n, isNumber)
	case c&(isSpace|isLetter|isNumber) == 0:
		return runEndNot(s, j+n, isSpace|isLetter|isNumber)
	}
	return spaceEnd(s, i)
}

// spaceEnd is \s+(?!\S)|\s+ at byte i, a whitespace: the whole run of
// whitespace, less its last rune when more than one come before non-space
// (that one starts the next word: " ?\p{L}+" takes a space before a letter).
func spaceEnd(s string, i int) int {
	last, end := i, i
	for end < len(s) {
		c, n := classAt(s, end)
		if c&isSpace == 0 {
			break
		}
		last, end = end, end+n
	}
	if end < len(s) && last > i {
		return last
	}
	return end
}

// splitLlama3 is (?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|
// [^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
func splitLlama3(s string, yield func(string)) {
	for i := 0; i < len(s); {
		end := llama3WordEnd(s, i, 3)
		yield(s[i:end])
		i = end
	}
}

// splitQwen2 is splitLlama3 with \p{N} for \p{N}{1,3}: one digit a word.
func splitQwen2(s string, yield func(string)) {
	for i := 0; i < len(s); {
		end := llama3WordEnd(s, i, 1)
		yield(s[i:end])
		i = end
	}
}

// llama3WordEnd returns the end of the llama3 word that starts at byte i,
// with numbers cut every maxDigits digits.
func llama3WordEnd(s string, i, maxDigits int) int {
	b := s[i]
	if b == '\'' && i+1 < len(s) {
		// |0x20 lowers ASCII letters; no other byte lands on these letters.
		switch s[i+1] | 0x20 {
		case 's', 't', 'm', 'd':
			return i + 2
		case 'r', 'v':
			if i+2 < len(s) && s[i+2]|0x20 == 'e' {
				return i + 3
			}
		case 'l':
			if i+2 < len(s) && s[i+2]|0x20 == 'l' {
				return i + 3
			}
		}
	}
	c, n := classAt(s, i)
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if c&isLetter != 0 {
		return runEnd(s, i+n, isLetter)
	}
	if c&(isNewline|isNumber) == 0 && i+n < len(s) {
		if c2, n2 := classAt(s, i+n); c2&isLetter != 0 {
			return runEnd(s, i+n+n2, isLetter)
		}
	}
	// \p{N}{1,maxDigits}
	if c&isNumber != 0 {
		end := i + n
		for k := 1; k < maxDigits && end < len(s); k++ {
			c2, n2 := classAt(s, end)
			if c2&isNumber == 0 {
				break
			}
			end += n2
		}
		return end
	}
	//  ?[^\s\p{L}\p{N}]+[\r\n]*
	if end := otherRunEnd(s, i, c, n); end > i {
		for end < len(s) && (s[end] == '\r' || s[end] == '\n') {
			end++
		}
		return end
	}
	return whitespaceEnd(s, i)
}

// otherRunEnd is  ?[^\s\p{L}\p{N}]+ at byte i, whose rune has class bits c
// and length n: the end of the match, or i when none starts there.
func otherRunEnd(s string, i int, c uint16, n int) int {
	j := i
	if s[i] == ' ' && i+1 < len(s) {
		j = i + 1
		c, n = classAt(s, j)
	}
	if c&(isSpace|isLetter|isNumber) != 0 {
		return i
	}
	return runEndNot(s, j+n, isSpace|isLetter|isNumber)
}

// splitExaoneMoE is (?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|
// [^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]?|
// \s*[\r\n]|\s+(?!\S)|\s+: llama3's alternatives with one digit a word, marks
// after letters, and words joined by single spaces ("hello world" is one).
func splitExaoneMoE(s string, yield func(string)) {
	for i := 0; i < len(s); {
		end := exaoneMoEWordEnd(s, i)
		yield(s[i:end])
		i = end
	}
}

// exaoneMoEWordEnd returns the end of the exaone-moe word that starts at byte i.
func exaoneMoEWordEnd(s string, i int) int {
	if end := contractionEnd(s, i); end > i {
		return end
	}
	c, n := classAt(s, i)
	// [^\r\n\p{L}\p{N}]? then letters, each with its marks, one space
	// allowed between two
	if c&isLetter != 0 {
		return spacedLettersEnd(s, i+n)
	}
	if c&(isNewline|isNumber) == 0 && i+n < len(s) {
		if c2, n2 := classAt(s, i+n); c2&isLetter != 0 {
			return spacedLettersEnd(s, i+n+n2)
		}
	}
	if c&isNumber != 0 {
		return i + n
	}
	//  ?[^\s\p{L}\p{N}]+[\r\n/]?
	if end := otherRunEnd(s, i, c, n); end > i {
		if end < len(s) && (s[end] == '\r' || s[end] == '\n' || s[end] == '/') {
			end++
		}
		return end
	}
	// \s*[\r\n] ends at the run's last newline as \s*[\r\n]+ does
	return whitespaceEnd(s, i)
}

// spacedLettersEnd returns the end of the letters after a letter that ends
// at byte i: marks, letters, and a space where a letter follows it.
func spacedLettersEnd(s string, i int) int {
	for i < len(s) {
		c, n := classAt(s, i)
		if c&(isLetter|isMark) != 0 {
			i += n
			continue
		}
		if s[i] != ' ' || i+1 == len(s) {
			break
		}
		if c2, n2 := classAt(s, i+1); c2&isLetter != 0 {
			i += 1 + n2
			continue
		}
		break
	}
	return i
}

// runEndNot returns the end of the run of runes with none of the bits of
// mask that starts at i.
func runEndNot(s string, i int, mask uint16) int {
	for i < len(s) {
		c, n := classAt(s, i)
		if c&mask != 0 {
			break
		}
		i += n
	}
	return i
}

// classRuns is the regex [class]+ for the class bits of mask.
func classRuns(mask uint16) splitter {
	return func(s string, yield func(string)) {
		gap := 0 // start of the text not yet yielded
		for i := 0; i < len(s); {
			c, n := classAt(s, i)
			if c&mask == 0 {
				i += n
				continue
			}
			end := runEnd(s, i+n, mask)
			yieldMatch(s, gap, i, end, yield)
			gap, i = end, end
		}
		if gap < len(s) {
			yield(s[gap:])
		}
	}
}

// classSingles is the regex [class]: each rune of the class alone.
func classSingles(mask uint16) splitter {
	return func(s string, yield func(string)) {
		gap := 0
		for i := 0; i < len(s); {
			c, n := classAt(s, i)
			if c&mask != 0 {
				yieldMatch(s, gap, i, i+n, yield)
				gap = i + n
			}
			i += n
		}
		if gap < len(s) {
			yield(s[gap:])
		}
	}
}

// optSpaceRuns is the regex \s?[class]+, for a class without whitespace.
func optSpaceRuns(mask uint16) splitter {
	return func(s string, yield func(string)) {
		gap := 0
		for i := 0; i < len(s); {
			c, n := classAt(s, i)
			start := i + n // the class run's first rune after byte i's rune, if byte i's is in it
			if c&mask == 0 {
				if c&isSpace == 0 || i+n >= len(s) {
					i += n
					continue
				}
				c2, n2 := classAt(s, i+n)
				if c2&mask == 0 {
					i += n
					continue
				}
				start = i + n + n2
			}
			end := runEnd(s, start, mask)
			yieldMatch(s, gap, i, end, yield)
			gap, i = end, end
		}
		if gap < len(s) {
			yield(s[gap:])
		}
	}
}

// trailingSpace is the regex \s+$: the whitespace that ends the piece.
func trailingSpace(s string, yield func(string)) {
	start := -1 // start of the current run of whitespace
	for i := 0; i < len(s); {
		c, n := classAt(s, i)
		switch {
		case c&isSpace == 0:
			start = -1
		case start < 0:
			start = i
		}
		i += n
	}
	if start > 0 {
		yield(s[:start])
	}
	if start < 0 {
		start = 0
	}
	yield(s[start:])
}

// asciiDigits3 is the regex [0-9][0-9][0-9].
func asciiDigits3(s string, yield func(string)) {
	gap := 0
	for i := 0; i+3 <= len(s); {
		if isDigit(s[i]) && isDigit(s[i+1]) && isDigit(s[i+2]) {
			yieldMatch(s, gap, i, i+3, yield)
			gap, i = i+3, i+3
			continue
		}
		i++
	}
	if gap < len(s) {
		yield(s[gap:])
	}
}

func isDigit(b byte) bool { return '0' <= b && b <= '9' }

// yieldMatch yields the text between gap and the match, then the match s[i:end].
func yieldMatch(s string, gap, i, end int, yield func(string)) {
	if gap < i {
		yield(s[gap:i])
	}
	yield(s[i:end])
}

// whitespaceEnd is the end of the whitespace at byte i as the
// pre-tokenizers' last alternatives take it: \s*[\r\n]+ (up to the last
// newline of the run) when the run holds a newline, else the spaces
// spaceEnd leaves.
func whitespaceEnd(s string, i int) int {
	nl := -1
	for end := i; end < len(s); {
		c, n := classAt(s, end)
		if c&isSpace == 0 {
			break
		}
		end += n
		if c&isNewline != 0 {
			nl = end
		}
	}
	if nl >= 0 {
		return nl
	}
	return spaceEnd(s, i)
}
