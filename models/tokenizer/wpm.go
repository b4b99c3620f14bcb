package tokenizer

import "fmt"

// Placeholder until the wpm algorithm lands; the helper writing wpm.go replaces this file.
func newWPM(v *Vocab) (model, error) {
	return nil, fmt.Errorf("%w: WordPiece is not implemented yet", ErrVocab)
}
