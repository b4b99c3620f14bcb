package tokenizer

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"unicode"
)

// afmoeDigitsReference is llama.cpp's \p{AFMoE_digits} written another way
// than splitAfmoeDigits, over runes: from the end of each run of \p{N} it
// steps back three runes at a time, marking a cut after each group, then
// cuts the text at every mark and at its end.
func afmoeDigitsReference(text string) []string {
	runes := []rune(text)
	cut := make([]bool, len(runes)+1)
	for i := 0; i < len(runes); {
		if !unicode.IsNumber(runes[i]) {
			i++
			continue
		}
		j := i
		for j < len(runes) && unicode.IsNumber(runes[j]) {
			j++
		}
		for end := j; end > i; end -= 3 {
			cut[end] = true
		}
		i = j
	}
	cut[len(runes)] = len(runes) > 0
	var out []string
	start := 0
	for k := 1; k <= len(runes); k++ {
		if cut[k] {
			out = append(out, string(runes[start:k]))
			start = k
		}
	}
	return out
}

// TestAfmoeDigits: runs of \p{N} cut in threes from the right, the text
// before a run in one piece with its first group.
func TestAfmoeDigits(t *testing.T) {
	tests := []struct {
		text string
		want []string
	}{
		{"1", []string{"1"}},
		{"12", []string{"12"}},
		{"123", []string{"123"}},
		{"1234", []string{"1", "234"}},
		{"12345", []string{"12", "345"}},
		{"123456", []string{"123", "456"}},
		{"1234567", []string{"1", "234", "567"}},
		{"ab 1234 cd", []string{"ab 1", "234", " cd"}},
		{"x123456y", []string{"x123", "456", "y"}},
		{"12a34", []string{"12", "a34"}},
		{"٣٣٣٣", []string{"٣", "٣٣٣"}},     // Arabic-Indic digits (Nd)
		{"①²½Ⅻ", []string{"①", "²½Ⅻ"}},     // No and Nl count as digits too
		{"๑๒ ไทย", []string{"๑๒", " ไทย"}}, // Thai digits
		{"no digits", []string{"no digits"}},
	}
	for _, tc := range tests {
		var got []string
		splitAfmoeDigits(tc.text, func(p string) { got = append(got, p) })
		if !slices.Equal(got, tc.want) {
			t.Errorf("splitAfmoeDigits(%q) = %q, want %q", tc.text, got, tc.want)
		}
		if ref := afmoeDigitsReference(tc.text); !slices.Equal(ref, tc.want) {
			t.Errorf("afmoeDigitsReference(%q) = %q, want %q", tc.text, ref, tc.want)
		}
	}
}

// TestPreTokenizerStagesMatchRegexes: each stage of a list, alone, splits
// random text as its regex does, on text the stages before it would not
// leave (digits before letters for afmoe's last, for one).
func TestPreTokenizerStagesMatchRegexes(t *testing.T) {
	n := 5000
	if testing.Short() {
		n = 500
	}
	for _, p := range allPreTokenizers {
		exprs := preOracleRegexes[p.name]
		if len(exprs) != len(p.stages) {
			t.Fatalf("%s: %d stages, %d regexes", p.name, len(p.stages), len(exprs))
		}
		if len(exprs) == 1 {
			continue // TestPreTokenizersMatchRegexes checks it
		}
		for k, expr := range exprs {
			t.Run(fmt.Sprintf("%s/%d", p.name, k), func(t *testing.T) {
				stage := p.stages[k]
				split := func(text string) []string {
					var out []string
					if text == "" {
						return nil // no stage is handed empty text
					}
					stage(text, func(piece string) { out = append(out, piece) })
					return out
				}
				checkRandomSplits(t, rand.New(rand.NewPCG(3, uint64(k))), n, split, preOracleStage(expr))
			})
		}
	}
}

// TestAfmoeCJKRanges: the table is the class of afmoe's second regex.
func TestAfmoeCJKRanges(t *testing.T) {
	if got := classRanges(afmoeCJKClass); !slices.Equal(got, afmoeCJKRanges) {
		t.Fatalf("afmoeCJKRanges differ from the regex class:\n got %v\nwant %v", afmoeCJKRanges, got)
	}
}
