package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// Detokenizer turns a stream of token ids into text that is safe to send as
// it comes: Add returns only complete UTF-8, holding back the first bytes of
// a character whose remaining bytes are still to come (byte-fallback and
// byte-level tokens can split one character over several tokens). One
// Detokenizer serves one sequence; it is not safe for concurrent use.
type Detokenizer struct {
	t       *Tokenizer
	opt     DecodeOptions
	pending []byte // bytes held back: the start of an unfinished character
	started bool   // a token has produced text
}

// NewDetokenizer returns a detokenizer for one sequence.
func (t *Tokenizer) NewDetokenizer(opt DecodeOptions) *Detokenizer {
	return &Detokenizer{t: t, opt: opt}
}

// Add appends token id and returns the text that is now complete.
func (d *Detokenizer) Add(id int32) string {
	b := d.t.TokenBytes(id, d.opt)
	if len(b) == 0 {
		return ""
	}
	if !d.started {
		d.started = true
		// SentencePiece's space prefix is not part of the text: the first
		// piece loses one leading space, as sentencepiece's decoder does.
		if d.t.vocab.AddSpacePrefix && d.t.vocab.Model == "llama" && b[0] == ' ' {
			b = b[1:]
		}
	}
	d.pending = append(d.pending, b...)
	return d.take(heldBack(d.pending))
}

// Flush returns whatever is held back (an unfinished character becomes
// U+FFFD) and readies the detokenizer for a new sequence.
func (d *Detokenizer) Flush() string {
	s := d.take(0)
	d.started = false
	return s
}

// take returns the pending bytes except the last keep ones, with invalid
// UTF-8 replaced by U+FFFD.
func (d *Detokenizer) take(keep int) string {
	n := len(d.pending) - keep
	out := d.pending[:n]
	var s string
	if utf8.Valid(out) {
		s = string(out)
	} else {
		s = strings.ToValidUTF8(string(out), "\uFFFD")
	}
	d.pending = append(d.pending[:0], d.pending[n:]...)
	return s
}

// heldBack returns how many bytes at the end of p begin a character that
// more bytes could still complete.
func heldBack(p []byte) int {
	for k := 1; k <= utf8.UTFMax-1 && k <= len(p); k++ {
		c := p[len(p)-k]
		if c < 0x80 {
			return 0 // ASCII: everything before and including it is complete
		}
		if c >= 0xC0 { // a lead byte: is the sequence it starts still short?
			tail := p[len(p)-k:]
			if !utf8.FullRune(tail) {
				return k
			}
			return 0
		}
	}
	return 0
}
