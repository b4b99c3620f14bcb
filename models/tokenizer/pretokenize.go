package tokenizer

import (
	"log/slog"
	"unicode"
	"unicode/utf8"
)

// The pre-tokenizer of a byte-level BPE vocabulary cuts text into words
// before merges run, as the regexes of the model's tokenizer.json do. Which
// regexes a vocabulary uses is named by tokenizer.ggml.pre; the lists below
// are llama.cpp's (llm_tokenizer_bpe in llama-vocab.cpp), and each regex is
// implemented here as a hand-written scanner (pretok_*.go) that
// pretokenize_test.go checks against regexp2 running the original regex
// (afmoe's digit stage, which llama.cpp writes by hand, against a reference
// written there).
//
// The regexes of a list apply in sequence, as llama.cpp's unicode_regex_split
// and Hugging Face's Sequence of Split(behavior=Isolated) do: each one
// splits every piece the previous one left, and both its matches and the
// text between them become pieces, in order.
//
// Where llama.cpp departs from the regexes as Hugging Face runs them, folio
// follows llama.cpp (its test vectors agree either way):
//   - regexes without \p{..} classes see non-ASCII whitespace as \v (llama.cpp
//     rewrites it so for std::wregex), so an explicit class such as deepseek's
//     [　-。] or [ࠀ-一] never matches whitespace;
//   - llama3's (?i:'s|...) is llama.cpp's ASCII '[sS]|..., without Unicode
//     case folding ('ſ is no contraction).
//
// afmoe's first stage is no regex but llama.cpp's hand-written
// \p{AFMoE_digits} (pretok_afmoe.go), which leaves the text before a number
// in one piece with the number's first group of digits, and afmoe's class
// holds the code points that llama.cpp's source spells (afmoeCJKRanges);
// folio follows both.
//
// Invalid UTF-8, which llama.cpp replaces with U+FFFD before splitting,
// splits as U+FFFD would but keeps its raw bytes in the word, so the
// byte-level encoding keeps them exactly.

// splitter cuts text into consecutive non-empty pieces, in order, whose
// concatenation is text, and calls yield for each.
type splitter func(text string, yield func(piece string))

// preTokenizer is the regex list of one tokenizer.ggml.pre.
type preTokenizer struct {
	name   string     // the family, for tests and benchmarks
	stages []splitter // applied in sequence, each to every piece of the previous
	// nfc: the family's Hugging Face tokenizer normalizes text to NFC
	// before splitting (Qwen 2 and 3). llama.cpp skips that step, so its
	// ids differ from the model's own on text that is not NFC; ours do not.
	nfc bool
	// spmStyle: the family is llama.cpp's GEMMA4 pre-type, BPE over
	// SentencePiece-style pieces rather than byte-level ones (bpe_gemma4.go).
	spmStyle bool
}

// split calls yield for each word of text.
func (p *preTokenizer) split(text string, yield func(word string)) {
	if text == "" {
		return
	}
	f := yield
	for i := len(p.stages) - 1; i > 0; i-- {
		stage, next := p.stages[i], f
		f = func(piece string) { stage(piece, next) }
	}
	p.stages[0](text, f)
}

// Regex lists of llama.cpp, by the family's name.
var (
	// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
	preGPT2 = preTokenizer{name: "gpt-2", stages: []splitter{splitGPT2}}
	// (?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
	//  ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
	preLlama3 = preTokenizer{name: "llama3", stages: []splitter{splitLlama3}}
	// as llama3 with \p{N} for \p{N}{1,3}
	preQwen2 = preTokenizer{name: "qwen2", stages: []splitter{splitQwen2}, nfc: true}
	// letters split by case (pretok_case.go), \p{N}, ?[^\s\p{L}\p{N}]+[\r\n/]*, whitespace as llama3
	preTekken = preTokenizer{name: "tekken", stages: []splitter{splitTekken}}
	// tekken with contractions after the letters and \p{N}{1,3}
	preGPT4o = preTokenizer{name: "gpt-4o", stages: []splitter{splitGPT4o}}
	// [\p{P}\$\+<=>\^~\|]+, gpt-2, \p{N}+, [0-9][0-9][0-9]
	preDefault = preTokenizer{name: "default", stages: []splitter{
		classRuns(isPunct | isSymPunct), splitGPT2, classRuns(isNumber), asciiDigits3}}
	// [\p{P}\$\+<=>\^~\|`]+, gpt-2, [0-9][0-9][0-9]
	preFalcon = preTokenizer{name: "falcon", stages: []splitter{
		classRuns(isPunct | isSymPunct | isBacktick), splitGPT2, asciiDigits3}}
	// \p{N}, gpt-2
	preStarcoder = preTokenizer{name: "starcoder", stages: []splitter{classSingles(isNumber), splitGPT2}}
	// [\r\n], \s?\p{L}+, \s?\p{P}+, [一-龥ࠀ-一가-퟿]+, \p{N}
	preDeepseekCoder = preTokenizer{name: "deepseek-coder", stages: []splitter{
		classSingles(isNewline), optSpaceRuns(isLetter), optSpaceRuns(isPunct),
		classRuns(isCJK), classSingles(isNumber)}}
	// [\r\n], \s?[A-Za-zµÀ-ÖØ-öø-ƺ...]+, \s?[!-/:-~！-／：-～‘-‟　-。]+, \s+$,
	// [一-龥ࠀ-一가-퟿]+, \p{N}+
	preDeepseekLLM = preTokenizer{name: "deepseek-llm", stages: []splitter{
		classSingles(isNewline), optSpaceRuns(isDSLetter), optSpaceRuns(isDSPunct),
		trailingSpace, classRuns(isCJK), classRuns(isNumber)}}
	// llama.cpp's \p{AFMoE_digits} (digits in threes from the right), [一-鿿㐀-䶿...]+,
	// [!-/:-@[-`{-~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|
	// \s*[\r\n]+|\s+(?!\S)|\s+ (pretok_afmoe.go)
	preAfmoe = preTokenizer{name: "afmoe", stages: []splitter{
		splitAfmoeDigits, classRuns(isAfmoeCJK), splitAfmoe}}
	// llama3 with \p{N} and letters joined across single spaces:
	// [^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+, ?[^\s\p{L}\p{N}]+[\r\n/]?, \s*[\r\n]
	preExaoneMoE = preTokenizer{name: "exaone-moe", stages: []splitter{splitExaoneMoE}}
	// [^\n]+|[\n]+: llama.cpp cuts Gemma 4's text only at the edges of
	// runs of newlines, so that merges run over whole lines (bpe_gemma4.go)
	preGemma4 = preTokenizer{name: "gemma4", stages: []splitter{classRuns(isLineFeed)}, spmStyle: true}
)

// preTokenizers maps tokenizer.ggml.pre to its regex list, as llama.cpp's
// llama_vocab::impl::load does; ignoreMerges lists the pre-types for which
// a word that is itself a token is not merged (Hugging Face ignore_merges).
var (
	preTokenizers = map[string]*preTokenizer{
		"": &preDefault, "default": &preDefault,

		"gpt-2": &preGPT2, "phi-2": &preGPT2, "jina-es": &preGPT2, "jina-de": &preGPT2,
		"gigachat": &preGPT2, "jina-v2-es": &preGPT2, "jina-v2-de": &preGPT2,
		"a.x-4.0": &preGPT2, "mellum": &preGPT2, "modern-bert": &preGPT2,
		"jina-v1-en": &preGPT2, "jina-v2-code": &preGPT2, "roberta-bpe": &preGPT2,
		"exaone4": &preGPT2, "mpt": &preGPT2, "olmo": &preGPT2, "jais": &preGPT2,
		"trillion": &preGPT2, "granite-docling": &preGPT2,

		"llama3": &preLlama3, "llama-v3": &preLlama3, "llama-bpe": &preLlama3,
		"falcon3": &preLlama3, "falcon-h1": &preLlama3, "pixtral": &preLlama3,
		"midm-2.0": &preLlama3, "lfm2": &preLlama3, "jina-v5-nano": &preLlama3,
		"dbrx": &preLlama3, "smaug-bpe": &preLlama3, "glm4": &preLlama3, "chatglm-bpe": &preLlama3,

		"qwen2": &preQwen2, "deepseek-r1-qwen": &preQwen2, "kormo": &preQwen2,
		"f2llmv2": &preQwen2, "megrez": &preQwen2, "stablelm2": &preQwen2,
		"hunyuan": &preQwen2, "solar-open": &preQwen2,

		"falcon": &preFalcon,

		"starcoder": &preStarcoder, "refact": &preStarcoder, "command-r": &preStarcoder,
		"smollm": &preStarcoder, "codeshell": &preStarcoder, "exaone": &preStarcoder,
		"minerva-7b": &preStarcoder, "mellum2": &preStarcoder,

		"deepseek-coder": &preDeepseekCoder,
		"deepseek-llm":   &preDeepseekLLM,

		"tekken": &preTekken,

		"afmoe":      &preAfmoe,
		"exaone-moe": &preExaoneMoE,

		"gemma4": &preGemma4, "granite-embed-multi-311m": &preGemma4,

		"gpt-4o": &preGPT4o, "llama4": &preGPT4o, "kanana2": &preGPT4o, "talkie": &preGPT4o, "minimax-m2": &preGPT4o,
	}
	ignoreMerges = map[string]bool{
		"llama3": true, "llama-v3": true, "llama-bpe": true, "falcon3": true,
		"falcon-h1": true, "pixtral": true, "midm-2.0": true, "lfm2": true, "jina-v5-nano": true,
		"tekken": true,
	}
)

// preTokenizerFor returns the pre-tokenizer of tokenizer.ggml.pre. An empty
// name is llama.cpp's "default" list; a name folio does not know falls back
// to the gpt-2 regex with a warning, where llama.cpp refuses the model.
func preTokenizerFor(pre string) *preTokenizer {
	if p, ok := preTokenizers[pre]; ok {
		if pre == "" {
			slog.Warn("tokenizer: the vocabulary has no tokenizer.ggml.pre; using llama.cpp's default pre-tokenizer (tokenization may differ from the model's own)")
		}
		return p
	}
	slog.Warn("tokenizer: unknown pre-tokenizer; using the gpt-2 regex (tokenization may differ from the model's own)", "tokenizer.ggml.pre", pre)
	return &preGPT2
}

// Character classes of the regexes, one bit each.
const (
	isLetter   uint16 = 1 << iota // \p{L}
	isNumber                      // \p{N}
	isPunct                       // \p{P}
	isSpace                       // \s: Unicode White_Space, llama.cpp's is_whitespace
	isNewline                     // [\r\n]
	isSymPunct                    // [\$\+<=>\^~\|] of the falcon and default lists
	isBacktick                    // ` of the falcon list
	isDSLetter                    // deepseek-llm's letters [A-Za-zµÀ-ÖØ-öø-ƺ...], not whitespace
	isDSPunct                     // deepseek-llm's [!-/:-~！-／：-～‘-‟　-。], not whitespace
	isCJK                         // deepseek's [一-龥ࠀ-一가-퟿], not whitespace
	isMark                        // \p{M}
	isSymbol                      // \p{S}
	isAfmoeCJK                    // afmoe's CJK and Southeast Asian scripts (afmoeCJKRanges)
	isLineFeed                    // \n of gemma4's list
)

// runeRange is an inclusive range of code points.
type runeRange struct{ lo, hi rune }

// The explicit classes of the deepseek regexes, as written there.
var (
	dsLetterRanges = []runeRange{
		{0x0041, 0x005A}, {0x0061, 0x007A}, {0x00B5, 0x00B5}, {0x00C0, 0x00D6}, {0x00D8, 0x00F6},
		{0x00F8, 0x01BA}, {0x01BC, 0x01BF}, {0x01C4, 0x0293}, {0x0295, 0x02AF}, {0x0370, 0x0373},
		{0x0376, 0x0377}, {0x037B, 0x037D}, {0x037F, 0x037F}, {0x0386, 0x0386}, {0x0388, 0x038A},
		{0x038C, 0x038C}, {0x038E, 0x03A1}, {0x03A3, 0x03F5}, {0x03F7, 0x0481}, {0x048A, 0x052F},
		{0x0531, 0x0556}, {0x10A0, 0x10C5}, {0x13A0, 0x13F5}, {0x13F8, 0x13FD}, {0x1C90, 0x1CBA},
		{0x1CBD, 0x1CBF}, {0x1D00, 0x1D2B}, {0x1D6B, 0x1D77}, {0x1D79, 0x1D9A}, {0x1E00, 0x1F15},
		{0x1F18, 0x1F1D}, {0x1F20, 0x1F45}, {0x1F48, 0x1F4D}, {0x1F50, 0x1F57}, {0x1F59, 0x1F59},
		{0x1F5B, 0x1F5B}, {0x1F5D, 0x1F5D}, {0x1F5F, 0x1F7D}, {0x1F80, 0x1FB4}, {0x1FB6, 0x1FBC},
		{0x1FBE, 0x1FBE}, {0x1FC2, 0x1FC4}, {0x1FC6, 0x1FCC}, {0x1FD0, 0x1FD3}, {0x1FD6, 0x1FDB},
		{0x1FE0, 0x1FEC}, {0x1FF2, 0x1FF4}, {0x1FF6, 0x1FFC}, {0x2102, 0x2102}, {0x2107, 0x2107},
		{0x210A, 0x2113}, {0x2115, 0x2115}, {0x2119, 0x211D}, {0x2124, 0x2124}, {0x2126, 0x2126},
		{0x2128, 0x2128}, {0x212A, 0x212D}, {0x212F, 0x2134}, {0x2139, 0x2139}, {0x213C, 0x213F},
		{0x2145, 0x2149}, {0x214E, 0x214E}, {0x2183, 0x2184}, {0x2C00, 0x2C7B}, {0x2C7E, 0x2CE4},
		{0x2CEB, 0x2CEE}, {0x2CF2, 0x2CF3}, {0xA640, 0xA66D}, {0xA680, 0xA69B}, {0xA722, 0xA76F},
		{0xA771, 0xA787}, {0xA78B, 0xA78E}, {0xAB70, 0xABBF}, {0xFB00, 0xFB06}, {0xFB13, 0xFB17},
		{0xFF21, 0xFF3A}, {0xFF41, 0xFF5A}, {0x10400, 0x1044F}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB},
		{0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
	}
	dsPunctRanges = []runeRange{
		{0x0021, 0x002F}, {0x003A, 0x007E}, {0xFF01, 0xFF0F}, {0xFF1A, 0xFF5E}, {0x2018, 0x201F}, {0x3000, 0x3002},
	}
	cjkRanges = []runeRange{{0x4E00, 0x9FA5}, {0x0800, 0x4E00}, {0xAC00, 0xD7FF}}
	// afmoe's class, [一-鿿㐀-䶿豈-﫿぀-ゟ゠-ヿ･-ﾟ⼀-⿟เ-๿຀-໿ក-៿က-႟ꩠ-ꩿꧠ-꧿가-힯ᄀ-ᇿ], by the code
	// points of llama.cpp's source: CJK ideographs, kana (halfwidth too),
	// Kangxi radicals, Thai, Lao, Khmer, Myanmar, Hangul. Its 豈 is U+8C48
	// (NFC's form of U+F900), so that range runs from U+8C48 over Yi,
	// Latin Extended-D, Hangul and private use to U+FAFF; its Thai range
	// starts at เ U+0E40, after the consonants.
	afmoeCJKRanges = []runeRange{
		{0x4E00, 0x9FFF}, {0x3400, 0x4DBF}, {0x8C48, 0xFAFF}, {0x3040, 0x309F}, {0x30A0, 0x30FF},
		{0xFF65, 0xFF9F}, {0x2F00, 0x2FDF}, {0x0E40, 0x0E7F}, {0x0E80, 0x0EFF}, {0x1780, 0x17FF},
		{0x1000, 0x109F}, {0xAA60, 0xAA7F}, {0xA9E0, 0xA9FF}, {0xAC00, 0xD7AF}, {0x1100, 0x11FF},
	}
)

// bmpClass holds the class bits of every code point below U+10000 (128 KiB,
// built at init in well under a millisecond); classOf computes the rest.
var bmpClass = buildBMPClass()

func buildBMPClass() *[0x10000]uint16 {
	var t [0x10000]uint16
	set := func(bit uint16, tab *unicode.RangeTable) {
		for _, r := range tab.R16 {
			for c := rune(r.Lo); c <= rune(r.Hi); c += rune(r.Stride) {
				t[c] |= bit
			}
		}
	}
	set(isLetter, unicode.L)
	set(isNumber, unicode.N)
	set(isPunct, unicode.P)
	set(isSpace, unicode.White_Space)
	set(isMark, unicode.M)
	set(isSymbol, unicode.S)
	t['\r'] |= isNewline
	t['\n'] |= isNewline | isLineFeed
	for _, c := range "$+<=>^~|" {
		t[c] |= isSymPunct
	}
	t['`'] |= isBacktick
	for _, x := range []struct {
		bit    uint16
		ranges []runeRange
	}{{isDSLetter, dsLetterRanges}, {isDSPunct, dsPunctRanges}, {isCJK, cjkRanges}, {isAfmoeCJK, afmoeCJKRanges}} {
		for _, r := range x.ranges {
			for c := r.lo; c <= r.hi && c < 0x10000; c++ {
				if t[c]&isSpace == 0 {
					t[c] |= x.bit
				}
			}
		}
	}
	return &t
}

// classOf returns the class bits of r. utf8.RuneError, which stands for an
// invalid byte too, is a symbol (\p{S}), as llama.cpp's U+FFFD for one.
func classOf(r rune) uint16 {
	if r < 0x10000 {
		return bmpClass[r]
	}
	var c uint16
	switch {
	case unicode.IsLetter(r):
		c = isLetter
	case unicode.IsNumber(r):
		c = isNumber
	case unicode.IsPunct(r):
		c = isPunct
	case unicode.IsMark(r):
		c = isMark
	case unicode.IsSymbol(r):
		c = isSymbol
	}
	for _, rr := range dsLetterRanges {
		if rr.lo <= r && r <= rr.hi {
			c |= isDSLetter
		}
	}
	return c
}

// classAt returns the class bits and byte length of the rune at byte i.
func classAt(s string, i int) (uint16, int) {
	if b := s[i]; b < utf8.RuneSelf {
		return bmpClass[b], 1
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	return classOf(r), n
}

// runEnd returns the end of the run of runes of class mask that starts at i.
func runEnd(s string, i int, mask uint16) int {
	for i < len(s) {
		c, n := classAt(s, i)
		if c&mask == 0 {
			break
		}
		i += n
	}
	return i
}
