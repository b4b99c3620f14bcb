package tokenizer

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Gemma 4's vocabularies (tokenizer.ggml.model "gemma4") are BPE with
// merges over SentencePiece-style pieces: "▁Hello", "\n\n", <0xE2>. Each
// step below follows what llama.cpp's llama-vocab.cpp does for them.
//
// Loading (llama_vocab::impl::load; vocab.go): a gemma4 vocabulary is its
// BPE type with the merges read by rank, no default special ids, and the
// GEMMA4 pre-type whatever tokenizer.ggml.pre says (LoadVocab sets Pre to
// "gemma4"; the pre-tokenizer name "granite-embed-multi-311m" selects the
// same pre-type for a gpt2 vocabulary). That pre-type escapes whitespace,
// keeps clean_spaces on and forces add_bos, warning where the file says
// false. <eos>, <turn|> and <|tool_response> end generation by their text;
// where <|tool_response> is in the vocabulary, </s> does not and becomes a
// normal token (collectEOG).
//
// Encoding a run of plain text between special tokens (impl::tokenize and
// llm_tokenizer_bpe_session::tokenize):
//
//  1. every ' ' becomes "▁", the vocabulary's normalizer; no space is put in
//     front of the text, whatever tokenizer.ggml.add_space_prefix says
//     (llama.cpp's BPE path never prefixes one; Gemma 4's converter writes
//     false anyway);
//  2. the text is decoded to code points and encoded back, as
//     unicode_regex_split does before splitting: an invalid byte becomes
//     U+FFFD (spmStyleText);
//  3. it is cut into runs of newlines and runs of anything else (the
//     pre-type's one regex, [^\n]+|[\n]+: preGemma4), so that merges run
//     over whole lines, and the words stay raw UTF-8 (the pre-type's
//     byte_encode is off: no GPT-2 byte-to-rune mapping);
//  4. a word of newlines only that is itself a token is that token, unmerged
//     (newlineToken; Gemma 4's "\n\n\n" has no merges that build it);
//  5. each UTF-8 character of any other word is one symbol (charSyms), and
//     the merges run by rank, the leftmost of equal ranks first, as for
//     byte-level BPE (bpe.go);
//  6. a final symbol that is no token becomes the <0xNN> token of each of
//     its bytes, SentencePiece's byte fallback; a byte without one is
//     dropped (spmStyleFallback).
//
// Decoding (token_to_piece, token_to_byte): a normal token is its piece
// with "▁" back to a space, a byte token <0xNN> its byte
// (appendPieceBytes), the others as for every vocabulary (TokenBytes).
// llama_detokenize then also removes some spaces before punctuation and
// apostrophes (" ." becomes "."; clean_spaces); folio's Decode, as the
// token_to_piece pieces that llama.cpp streams a reply in, does not.

// spmStyleText returns text as llama.cpp hands it to the merges of a
// SentencePiece-style BPE vocabulary: each ' ' as "▁" and, where text is
// not valid UTF-8, each code point as llama.cpp's lenient decoder reads it
// (decodeLenient) encoded again: a byte that starts no sequence is U+FFFD,
// an overlong form becomes the short one, a surrogate stays as it was.
func spmStyleText(text string) string {
	if utf8.ValidString(text) {
		return strings.ReplaceAll(text, " ", spaceMark)
	}
	b := make([]byte, 0, len(text)+len(text)/2)
	for i := 0; i < len(text); {
		r, n := decodeLenient(text[i:])
		i += n
		switch {
		case r == ' ':
			b = append(b, spaceMark...)
		case 0xD800 <= r && r <= 0xDFFF: // utf8.AppendRune would write U+FFFD
			b = append(b, 0xE0|byte(r>>12), 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F)
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	return string(b)
}

// spmStyleFallback returns the byte fallback of a SentencePiece-style BPE
// vocabulary: the <0xNN> token of each byte (upper-case hex, the only
// spelling llama.cpp looks up), NoToken where there is none.
func spmStyleFallback(v *Vocab) [256]int32 {
	var fb [256]int32
	for b := range fb {
		fb[b] = NoToken
		if id, ok := v.ids[fmt.Sprintf("<0x%02X>", b)]; ok {
			fb[b] = id
		}
	}
	return fb
}

// newlineToken returns the token of word when word is a run of newlines
// that the vocabulary has as one token.
func (m *bpe) newlineToken(word string) (int32, bool) {
	if strings.TrimLeft(word, "\n") != "" {
		return 0, false
	}
	id, ok := m.vocab.ids[word]
	return id, ok
}

// charSyms appends the symbols of the UTF-8 characters of word (a lead
// byte says how many bytes follow, as llama.cpp's unicode_len_utf8; word
// is valid after spmStyleText but for surrogates, which still count 3): the
// character's token, else the symbol merges know it by, else
// unknownSym(offset), a symbol no merge joins.
func (m *bpe) charSyms(syms []int32, word string) []int32 {
	for off := 0; off < len(word); {
		n := min(utf8SeqLen(word[off]), len(word)-off)
		c := word[off : off+n]
		if id, ok := m.vocab.ids[c]; ok {
			syms = append(syms, id)
		} else if s, ok := m.extraSym[c]; ok {
			syms = append(syms, s)
		} else {
			syms = append(syms, unknownSym(off))
		}
		off += n
	}
	return syms
}

// unknownSym is the symbol of a character at byte off of its word that is
// neither a token nor named by a merge: -2-off. Negative symbols are in no
// merge (the merge table's keys are of non-negative symbols; -1 marks a
// merged-away symbol in mergeHeap), so it stays alone, and its text is
// found again by unknownChar.
func unknownSym(off int) int32 { return int32(-2 - off) }

// unknownChar returns the character of word that unknownSym s stands for.
func unknownChar(word string, s int32) string {
	off := int(-2 - s)
	return word[off : off+min(utf8SeqLen(word[off]), len(word)-off)]
}
