package cmd

import (
	"testing"

	"folio/internal/loadgen"
)

func TestBenchRestart(t *testing.T) {
	var got loadgen.RestartReport
	benchJSON(t, &got, "bench", "restart", "--model", tinySynth(t), "--history", "300", "--home", t.TempDir())
	// turn 2 is the 300-token history, turn 1's answer (≤ 16 tokens) and 20
	// new ones; every full block of what turn 1 computed comes back
	total := got.PromptEvalCount + got.PromptCachedCount
	if got.ColdTTFTms <= 0 || got.RestoredTTFTms <= 0 || !got.SameTokens || total < 320 || total > 336 ||
		got.PromptCachedCount < 288 || got.PromptCachedCount%16 != 0 || got.PromptEvalCount > 16+16+20 {
		t.Errorf("%+v", got)
	}
}
