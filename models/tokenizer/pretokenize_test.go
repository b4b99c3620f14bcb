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
	// afmoe's first stage, which llama.cpp splits by hand (afmoeDigitsReference)
	afmoeDigitsRegex = `\p{AFMoE_digits}`
	// the class by the code points of llama.cpp's source (its 豈 is U+8C48, its เ U+0E40)
	afmoeCJKClass = "\u4e00-\u9fff\u3400-\u4dbf\u8c48-\ufaff\u3040-\u309f\u30a0-\u30ff\uff65-\uff9f\u2f00-\u2fdf" +
		"\u0e40-\u0e7f\u0e80-\u0eff\u1780-\u17ff\u1000-\u109f\uaa60-\uaa7f\ua9e0-\ua9ff\uac00-\ud7af\u1100-\u11ff"
	afmoeRegex     = `[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_` + "`" + `{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	exaoneMoERegex = `(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]?|\s*[\r\n]|\s+(?!\S)|\s+`
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
	"afmoe":      {afmoeDigitsRegex, `[` + afmoeCJKClass + `]+`, afmoeRegex},
	"exaone-moe": {exaoneMoERegex},
	"gemma4":     {`[^\n]+|[\n]+`},
}

// preOracleCustom holds the stages llama.cpp splits by hand, by the regex
// text that names them there.
var preOracleCustom = map[string]func(string) []string{afmoeDigitsRegex: afmoeDigitsReference}

// allPreTokenizers lists each family once.
var allPreTokenizers = []*preTokenizer{
	&preGPT2, &preLlama3, &preQwen2, &preDefault, &preFalcon, &preStarcoder, &preDeepseekCoder, &preDeepseekLLM,
	&preTekken, &preGPT4o, &preAfmoe, &preExaoneMoE, &preGemma4,
}

// preOracle splits text as llama.cpp's unicode_regex_split does with regexes
// run by a backtracking engine: one function a stage, each splitting one piece.
type preOracle []func(piece string) []string

func newPreOracle(t testing.TB, name string) preOracle {
	t.Helper()
	var o preOracle
	for _, expr := range preOracleRegexes[name] {
		o = append(o, preOracleStage(expr))
	}
	if len(o) == 0 {
		t.Fatalf("no preOracle regexes for %s", name)
	}
	return o
}

// preOracleStage returns the splitter of one regex of a list.
func preOracleStage(expr string) func(string) []string {
	if f, ok := preOracleCustom[expr]; ok {
		return f
	}
	re := regexp2.MustCompile(expr, regexp2.None)
	return func(p string) []string { return preRegexSplit(re, p) }
}

func (o preOracle) split(text string) []string {
	if text == "" {
		return nil
	}
	pieces := []string{text}
	for _, stage := range o {
		var out []string
		for _, p := range pieces {
			out = append(out, stage(p)...)
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
// not digits, symbols, Unicode whitespace and near-whitespace, CJK, the
// scripts of afmoe's class (Thai, Lao, Khmer, Myanmar, Hangul, halfwidth
// kana) and the edges of the deepseek and afmoe classes, emoji and their
// modifiers, unassigned and private-use code points.
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
	a = append(a, []rune("\u20dd\u0e48\u17b6\u102b\u0f71\u302a©°€¨˚∑⌘✓₩\u02c2゛")...)
	a = append(a, []rune("ทยລາວខ្មែរមြន៣๓໒၃ꩠꧠ⼀豈㐀ｱｶﾟ･ｰ한가")...)
	for _, ranges := range [][]runeRange{dsLetterRanges, dsPunctRanges, cjkRanges, afmoeCJKRanges} {
		for _, r := range ranges {
			a = append(a, r.lo-1, r.lo, r.hi, r.hi+1)
		}
	}
	return a
}

// The runs preRandomText writes now and then besides single runes: numbers
// of up to ten digits of any \p{N} (afmoe cuts them in threes), and words of
// letters and marks apart by single spaces (exaone-moe joins them).
var (
	preDigitRunes = []rune("0123456789٣๓၃²½①Ⅻ𝟘")
	preWordRunes  = []rune("abzXYéжΩ가あไ豈ｱ\u0301\u0e31\u17b6")
)

// preRandomText returns up to 40 runes of the alphabet, numbers or words,
// in runs now and then.
func preRandomText(r *rand.Rand, alphabet []rune) string {
	var b strings.Builder
	for n := r.IntN(40); n > 0; n-- {
		switch r.IntN(10) {
		case 0:
			for k := 1 + r.IntN(10); k > 0; k-- {
				b.WriteRune(preDigitRunes[r.IntN(len(preDigitRunes))])
			}
		case 1:
			for w := range 1 + r.IntN(4) {
				if w > 0 {
					b.WriteByte(' ')
				}
				for k := 1 + r.IntN(3); k > 0; k-- {
					b.WriteRune(preWordRunes[r.IntN(len(preWordRunes))])
				}
			}
		default:
			c := alphabet[r.IntN(len(alphabet))]
			for k := 1 + r.IntN(4)*r.IntN(2); k > 0; k-- {
				b.WriteRune(c)
			}
		}
	}
	return b.String()
}

// TestPreTokenizersMatchRegexes: every scanner list splits random text as
// regexp2 running llama.cpp's regexes does.
func TestPreTokenizersMatchRegexes(t *testing.T) {
	n := 20000
	if testing.Short() {
		n = 2000
	}
	for _, p := range allPreTokenizers {
		t.Run(p.name, func(t *testing.T) {
			o := newPreOracle(t, p.name)
			r := rand.New(rand.NewPCG(1, uint64(len(p.name))))
			checkRandomSplits(t, r, n, func(text string) []string { return preSplitAll(p, text) }, o.split)
		})
	}
}

// checkRandomSplits fails t at the first of n random texts that split
// cuts otherwise than oracle.
func checkRandomSplits(t *testing.T, r *rand.Rand, n int, split, oracle func(string) []string) {
	t.Helper()
	alphabet := preAlphabet()
	for range n {
		text := preRandomText(r, alphabet)
		if got, want := split(text), oracle(text); !slices.Equal(got, want) {
			t.Fatalf("split(%+q)\n got %+q\nwant %+q", text, got, want)
		}
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

// classRanges returns the ranges of a regex class's text, written as
// single runes and lo-hi ranges, in order.
func classRanges(class string) []runeRange {
	var got []runeRange
	cls := []rune(class)
	for i := 0; i < len(cls); i++ {
		if i+2 < len(cls) && cls[i+1] == '-' {
			got = append(got, runeRange{cls[i], cls[i+2]})
			i += 2
		} else {
			got = append(got, runeRange{cls[i], cls[i]})
		}
	}
	return got
}

// TestDeepseekLetterRanges: the table is the class of deepseek-llm's regex.
func TestDeepseekLetterRanges(t *testing.T) {
	// the table joins adjacent singles (Ͷ Ͷ, Ↄↄ, ⳲⳳI) into ranges
	var merged []runeRange
	for _, r := range classRanges(dsLetterClass) {
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
		{&preAfmoe, "1234567", []string{"1", "234", "567"}},
		{&preAfmoe, "x 12345 y", []string{"x", " ", "12", "345", " y"}},
		// the spaces stay in the piece of "12", so \s+(?!\S) leaves the last alone
		{&preAfmoe, "a  12", []string{"a", " ", " ", "12"}},
		{&preAfmoe, "你好world!abc 東京", []string{"你好", "world", "!abc", " ", "東京"}},
		// the class runs, then the last regex cuts them further (･ is punctuation)
		{&preAfmoe, "ｱｲ･ｳ", []string{"ｱｲ", "･", "ｳ"}},
		// the class's Thai starts at U+0E40: ไ is in it, the consonants ท and ย are not
		{&preAfmoe, "ｱｲｳ ไทย", []string{"ｱｲｳ", " ", "ไ", "ทย"}},
		{&preAfmoe, " +=\n\nx \u0301é", []string{" +=\n\n", "x", " \u0301é"}},
		{&preAfmoe, "\x01a\x01", []string{"\x01a", "\x01"}},
		{&preExaoneMoE, "hello world 123 don't", []string{"hello world", " ", "1", "2", "3", " don", "'t"}},
		{&preExaoneMoE, "Hello  World\n\n x/y", []string{"Hello", " ", " World", "\n\n", " x", "/y"}},
		{&preExaoneMoE, "a, b!?\n\nc", []string{"a", ",", " b", "!?\n", "\n", "c"}},
		{&preExaoneMoE, "e\u0301 \u0301a", []string{"e\u0301", " \u0301", "a"}},
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
