package tokenizer

// Scanners for the case-splitting regexes of Mistral's tekken vocabularies
// (Nemo, Small 3.x, Devstral) and of o200k ("gpt-4o": Phi-4-mini), as
// llama.cpp writes them: the letters of a word are a run of "upper"
// letters (any letter but a-z) and then a run of "lower" ones (any letter
// but A-Z), as a backtracking engine matches them (caseLettersEnd), so
// "HTTPServer" is one word and "camelCase" two.

// splitTekken is
// [^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|
// [^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|
// \p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
func splitTekken(s string, yield func(string)) {
	for i := 0; i < len(s); {
		end := caseWordEnd(s, i, 1, false)
		yield(s[i:end])
		i = end
	}
}

// splitGPT4o is splitTekken with an optional contraction after the
// letters ((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?) and
// \p{N}{1,3} for \p{N}.
func splitGPT4o(s string, yield func(string)) {
	for i := 0; i < len(s); {
		end := caseWordEnd(s, i, 3, true)
		yield(s[i:end])
		i = end
	}
}

// caseWordEnd returns the end of the word that starts at byte i.
func caseWordEnd(s string, i, maxDigits int, contractions bool) int {
	c, n := classAt(s, i)
	// [^\r\n\p{L}\p{N}]? then letters: both letter alternatives match
	// wherever a letter starts, so the prefix is taken when a letter
	// follows it.
	j := -1
	switch {
	case c&isLetter != 0:
		j = i
	case c&(isNewline|isNumber) == 0 && i+n < len(s):
		if c2, _ := classAt(s, i+n); c2&isLetter != 0 {
			j = i + n
		}
	}
	if j >= 0 {
		end := caseLettersEnd(s, j)
		if contractions {
			end = contractionEnd(s, end)
		}
		return end
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
	//  ?[^\s\p{L}\p{N}]+[\r\n/]*
	if end := otherRunEnd(s, i, c, n); end > i {
		for end < len(s) && (s[end] == '\r' || s[end] == '\n' || s[end] == '/') {
			end++
		}
		return end
	}
	return whitespaceEnd(s, i)
}

// caseLettersEnd returns the end of the letters that start at byte j (a
// letter) as the backtracking regex matches them; letters outside ASCII
// are both upper and lower. The first alternative takes the longest run of
// upper letters that a lower one follows, then the lower run from there:
// an upper run followed by a-z takes that lower run too ("HTTPServer");
// else the upper run shrinks to end at its last letter outside ASCII,
// which is then the lower run ("ÉCOLE" gives "É"). When the run has no
// such letter, the second alternative takes all of it ("COLE").
func caseLettersEnd(s string, j int) int {
	e, both, bothN := j, -1, 0
	for e < len(s) {
		c, n := classAt(s, e)
		if c&isLetter == 0 || isLowerASCII(s[e]) {
			break
		}
		if s[e] >= 0x80 {
			both, bothN = e, n
		}
		e += n
	}
	if e < len(s) && isLowerASCII(s[e]) {
		// the lower run: letters but A-Z
		for e < len(s) {
			c, n := classAt(s, e)
			if c&isLetter == 0 || isUpperASCII(s[e]) {
				break
			}
			e += n
		}
		return e
	}
	if both >= 0 {
		// backtracking: the upper run shrinks to just before its last
		// letter outside ASCII, which starts (and, A-Z or a non-letter
		// following, ends) the lower run
		return both + bothN
	}
	return e
}

// contractionEnd is i plus an English contraction starting there, if any:
// '[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD].
func contractionEnd(s string, i int) int {
	if i+1 >= len(s) || s[i] != '\'' {
		return i
	}
	switch s[i+1] | 0x20 { // |0x20 lowers ASCII letters; no other byte lands on these
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
	return i
}

func isLowerASCII(b byte) bool { return 'a' <= b && b <= 'z' }
func isUpperASCII(b byte) bool { return 'A' <= b && b <= 'Z' }
