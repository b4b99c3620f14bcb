package tokenizer

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// The regex lists of llama.cpp's llm_tokenizer_bpe, verbatim: the preOracle the
// hand-written scanners are checked against.
const (
	gpt2Regex   = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)`
	llama3Regex = `(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	qwen2Regex  = `(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// llama.cpp's rewrites of the \p{Lu}…/\p{Ll}… classes of tekken's and o200k's tokenizer.json
	tekkenRegex = `[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	gpt4oRegex  = `[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// deepseek-llm's letters, as in its tokenizer.json
	dsLetterClass = `A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃`
	dsPunctClass  = `!-/:-~！-／：-～‘-‟　-。`
	cjkClass      = `一-龥ࠀ-一가-퟿`
)

var preOracleRegexes = map[string][]string{
	"gpt-2":          {gpt2Regex},
	"llama3":         {llama3Regex},
	"qwen2":          {qwen2Regex},
	"tekken":         {tekkenRegex},
	"gpt-4o":         {gpt4oRegex},
	"default":        {`[\p{P}\$\+<=>\^~\|]+`, gpt2Regex, `\p{N}+`, `[0-9][0-9][0-9]`},
	"falcon":         {"[\\p{P}\\$\\+<=>\\^~\\|`]+", gpt2Regex, `[0-9][0-9][0-9]`},
	"starcoder":      {`\p{N}`, gpt2Regex},
	"deepseek-coder": {`[\r\n]`, `\s?\p{L}+`, `\s?\p{P}+`, `[` + cjkClass + `]+`, `\p{N}`},
	"deepseek-llm": {`[\r\n]`, `\s?[` + dsLetterClass + `]+`, `\s?[` + dsPunctClass + `]+`, `\s+$`,
		`[` + cjkClass + `]+`, `\p{N}+`},
}

// allPreTokenizers lists each family once.
var allPreTokenizers = []*preTokenizer{
	&preGPT2, &preLlama3, &preQwen2, &preDefault, &preFalcon, &preStarcoder, &preDeepseekCoder, &preDeepseekLLM,
	&preTekken, &preGPT4o,
}

// preOracle splits text as llama.cpp's unicode_regex_split does with regexes
// run by a backtracking engine.
type preOracle []*regexp2.Regexp

func newPreOracle(t testing.TB, name string) preOracle {
	t.Helper()
	var o preOracle
	for _, expr := range preOracleRegexes[name] {
		o = append(o, regexp2.MustCompile(expr, regexp2.None))
	}
	if len(o) == 0 {
		t.Fatalf("no preOracle regexes for %s", name)
	}
	return o
}

func (o preOracle) split(text string) []string {
	if text == "" {
		return nil
	}
	pieces := []string{text}
	for _, re := range o {
		var out []string
		for _, p := range pieces {
			out = append(out, preRegexSplit(re, p)...)
		}
		pieces = out
	}
	return pieces
}

// preRegexSplit returns the matches of re in p and the text between them.
// Non-ASCII whitespace is matched as \v, as llama.cpp feeds std::wregex (it
// changes nothing for the \p{..} regexes).
func preRegexSplit(re *regexp2.Regexp, p string) []string {
	runes := []rune(p)
	mapped := slices.Clone(runes)
	for i, r := range mapped {
		if r >= utf8.RuneSelf && unicode.IsSpace(r) {
			mapped[i] = '\v'
		}
	}
	var out []string
	gap := 0
	m, err := re.FindRunesMatch(mapped)
	for ; m != nil && err == nil; m, err = re.FindNextMatch(m) {
		if m.Index > gap {
			out = append(out, string(runes[gap:m.Index]))
		}
		out = append(out, string(runes[m.Index:m.Index+m.Length]))
		gap = m.Index + m.Length
	}
	if err != nil {
		panic(err)
	}
	if gap < len(runes) {
		out = append(out, string(runes[gap:]))
	}
	return out
}

func preSplitAll(p *preTokenizer, text string) []string {
	var out []string
	p.split(text, func(w string) { out = append(out, w) })
	return out
}

// preAlphabet mixes the runes the regexes tell apart: ASCII of every kind,
// contraction letters, letters and marks of several scripts, numbers that are
// not digits, Unicode whitespace and near-whitespace, CJK and the edges of
// the deepseek classes, emoji and their modifiers, unassigned and private-use
// code points.
func preAlphabet() []rune {
	var a []rune
	for r := rune(0); r < 0x80; r++ {
		a = append(a, r)
	}
	a = append(a, []rune("'''''sStTrReEvVmMlLdD     \n\n\r\t")...)
	a = append(a, []rune("éµßªº²½¡«¬\u00a0\u0085\u00ad\u00d7ΑωЖя\u0301\u0300\u0903\u0915ไ\u0e31\u05d0")...)
	a = append(a, []rune("一龥\u9fa6가\ud7a3あアー。、「」\u3000\u3001\u3003！Ａａ０～")...)
	a = append(a, []rune("‘’“”—…\u1680\u2000\u200a\u2028\u2029\u202f\u205f\u200b\u200d\ufeff\ufe0f")...)
	a = append(a, []rune("٣Ⅻ①\U0001F600🦙\U0001F3FD𐐀𝐀𞤀𠀀\u0378\ue000\U0010FFFF\ufffd")...)
	for _, ranges := range [][]runeRange{dsLetterRanges, dsPunctRanges, cjkRanges} {
		for _, r := range ranges {
			a = append(a, r.lo-1, r.lo, r.hi, r.hi+1)
		}
	}
	return a
}

// preRandomText returns up to 40 runes of the alphabet, in runs now and then.
func preRandomText(r *rand.Rand, alphabet []rune) string {
	var b strings.Builder
	for n := r.IntN(40); n > 0; n-- {
		c := alphabet[r.IntN(len(alphabet))]
		for k := 1 + r.IntN(4)*r.IntN(2); k > 0; k-- {
			b.WriteRune(c)
		}
	}
	return b.String()
}

// TestPreTokenizersMatchRegexes: every scanner list splits random text as
// regexp2 running llama.cpp's regexes does.
func TestPreTokenizersMatchRegexes(t *testing.T) {
	alphabet := preAlphabet()
	n := 20000
	if testing.Short() {
		n = 2000
	}
	for _, p := range allPreTokenizers {
		t.Run(p.name, func(t *testing.T) {
			o := newPreOracle(t, p.name)
			r := rand.New(rand.NewPCG(1, uint64(len(p.name))))
			for range n {
				text := preRandomText(r, alphabet)
				if got, want := preSplitAll(p, text), o.split(text); !slices.Equal(got, want) {
					t.Fatalf("split(%+q)\n got %+q\nwant %+q", text, got, want)
				}
			}
		})
	}
}

// FuzzPreTokenizers checks every scanner list against the regexes on any
// valid UTF-8.
func FuzzPreTokenizers(f *testing.F) {
	for _, s := range []string{"Hello world's  123\n\n", "  \t\u3000x", "你好 世界。123456", "'S'll 'RE", "a\r\n\r\n b"} {
		f.Add(s)
	}
	oracles := map[string]preOracle{}
	for _, p := range allPreTokenizers {
		oracles[p.name] = newPreOracle(f, p.name)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if !utf8.ValidString(text) || len(text) > 200 {
			t.Skip()
		}
		for _, p := range allPreTokenizers {
			if got, want := preSplitAll(p, text), oracles[p.name].split(text); !slices.Equal(got, want) {
				t.Fatalf("%s: split(%+q)\n got %+q\nwant %+q", p.name, text, got, want)
			}
		}
	})
}

// TestPreTokenizeInvalidUTF8: an invalid byte splits as U+FFFD does, and
// stays in its word.
func TestPreTokenizeInvalidUTF8(t *testing.T) {
	alphabet := append(preAlphabet(), 0xFFFD, 0xFFFD, 0xFFFD)
	r := rand.New(rand.NewPCG(2, 2))
	for _, p := range allPreTokenizers {
		for range 2000 {
			// each U+FFFD of text becomes one invalid byte of bad
			text := preRandomText(r, alphabet)
			invalid := []string{"\xff", "\xc3", "\xe4\xbd"[:1], "\x80"}[r.IntN(4)]
			bad := strings.ReplaceAll(text, "\ufffd", invalid)
			got := preSplitAll(p, bad)
			if strings.Join(got, "") != bad {
				t.Fatalf("%s: pieces of %+q do not add up: %+q", p.name, bad, got)
			}
			for i := range got {
				got[i] = invalidAsFFFD(got[i])
			}
			if want := preSplitAll(p, text); !slices.Equal(got, want) {
				t.Fatalf("%s: split(%+q) = %+q, want as for %+q: %+q", p.name, bad, got, text, want)
			}
		}
	}
}

// TestDeepseekLetterRanges: the table is the class of deepseek-llm's regex.
func TestDeepseekLetterRanges(t *testing.T) {
	var got []runeRange
	cls := []rune(dsLetterClass)
	for i := 0; i < len(cls); i++ {
		if i+2 < len(cls) && cls[i+1] == '-' {
			got = append(got, runeRange{cls[i], cls[i+2]})
			i += 2
		} else {
			got = append(got, runeRange{cls[i], cls[i]})
		}
	}
	// the table joins adjacent singles (Ͷ Ͷ, Ↄↄ, ⳲⳳI) into ranges
	var merged []runeRange
	for _, r := range got {
		if n := len(merged); n > 0 && merged[n-1].hi+1 == r.lo {
			merged[n-1].hi = r.hi
			continue
		}
		merged = append(merged, r)
	}
	if !slices.Equal(merged, dsLetterRanges) {
		t.Fatalf("dsLetterRanges differ from the regex class:\n got %v\nwant %v", dsLetterRanges, merged)
	}
}

func TestPreTokenizeExamples(t *testing.T) {
	tests := []struct {
		pre  *preTokenizer
		text string
		want []string
	}{
		{&preGPT2, "Hello world's  123\tx", []string{"Hello", " world", "'s", " ", " 123", "\t", "x"}},
		{&preGPT2, "a   \n", []string{"a", "   \n"}},
		{&preLlama3, "I'M 12345 ok!!\n\n  x", []string{"I", "'M", " ", "123", "45", " ok", "!!\n\n", " ", " x"}},
		{&preQwen2, "x 123", []string{"x", " ", "1", "2", "3"}},
		{&preDefault, "a-b 1234567", []string{"a", "-", "b", " ", "123", "456", "7"}},
		{&preFalcon, "x`y 12345", []string{"x", "`", "y", " ", "123", "45"}},
		{&preStarcoder, "ab12", []string{"ab", "1", "2"}},
		{&preDeepseekCoder, "foo(x)\n你好 12", []string{"foo", "(", "x", ")", "\n", "你好", " ", "1", "2"}},
		{&preDeepseekLLM, "foo, 你好  ", []string{"foo", ",", " ", "你好", "  "}},
		{&preTekken, "HTTPServer camelCase ÉCOLE 123 I'm !\n/x", []string{"HTTPServer", " camel", "Case", " É", "COLE",
			" ", "1", "2", "3", " I", "'m", " !\n/", "x"}},
		{&preGPT4o, "I'M 12345 don't", []string{"I'M", " ", "123", "45", " don't"}},
	}
	for _, tc := range tests {
		if got := preSplitAll(tc.pre, tc.text); !slices.Equal(got, tc.want) {
			t.Errorf("%s: split(%q) = %q, want %q", tc.pre.name, tc.text, got, tc.want)
		}
	}
}

// invalidAsFFFD replaces each invalid byte of s with U+FFFD.
func invalidAsFFFD(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}
