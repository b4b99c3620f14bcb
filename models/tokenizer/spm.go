package tokenizer

import "fmt"

// Placeholder until the spm algorithm lands; the helper writing spm.go replaces this file.
func newSPM(v *Vocab) (model, error) {
	return nil, fmt.Errorf("%w: SentencePiece is not implemented yet", ErrVocab)
}
