package cmd

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"folio/models/tokenizer"
)

func newLogitsCmd() *cobra.Command {
	var (
		mf     modelFlags
		tokens string
		prompt string
		asJSON bool
		top    int
	)
	cmd := &cobra.Command{
		Use:   "logits MODEL (--tokens '[1,2,3]' | --prompt TEXT)",
		Short: "Print the next-token logits after a prompt, for comparisons with llama.cpp",
		Long: "logits runs the prompt through MODEL and prints the last position's logits over\n" +
			"the whole vocabulary. --prompt is tokenized with BOS and special-token text\n" +
			"parsed, as llama.cpp does; --tokens takes ids as they are.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (tokens == "") == (prompt == "") {
				return fmt.Errorf("logits: give exactly one of --tokens and --prompt")
			}
			var ids []int32
			if tokens != "" {
				if err := json.Unmarshal([]byte(tokens), &ids); err != nil {
					return fmt.Errorf("logits: --tokens %q is not a JSON array of ids: %v", tokens, err)
				}
			}
			m, err := mf.load(args[0])
			if err != nil {
				return err
			}
			defer m.Close()
			if prompt != "" {
				ids = m.Tok.Encode(prompt, tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: true})
			}
			if len(ids) == 0 {
				return fmt.Errorf("logits: the prompt has no tokens")
			}
			logits, err := m.Logits(ids)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if asJSON {
				return json.NewEncoder(w).Encode(struct {
					IDs    []int32   `json:"ids"`
					Logits []float32 `json:"logits"`
				}{ids, logits})
			}
			order := make([]int32, len(logits))
			for i := range order {
				order[i] = int32(i)
			}
			slices.SortStableFunc(order, func(a, b int32) int {
				switch {
				case logits[a] > logits[b]:
					return -1
				case logits[a] < logits[b]:
					return 1
				}
				return 0
			})
			fmt.Fprintf(w, "%d prompt tokens, %d logits; top %d:\n", len(ids), len(logits), top)
			for _, id := range order[:min(top, len(order))] {
				fmt.Fprintf(w, "%8d  %-20q %12.6f\n", id, m.Tok.Piece(id), logits[id])
			}
			return nil
		},
	}
	mf.register(cmd)
	f := cmd.Flags()
	f.StringVar(&tokens, "tokens", "", "prompt as a JSON array of token ids")
	f.StringVar(&prompt, "prompt", "", "prompt text")
	f.BoolVar(&asJSON, "json", false, `print {"ids": [...], "logits": [...]}`)
	f.IntVar(&top, "top", 10, "without --json: how many of the largest logits to list")
	return cmd
}
