package cmd

import (
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"folio/models/gguf"
	"folio/models/tokenizer"
)

func newTokenizeCmd() *cobra.Command {
	var bos, special, asJSON bool
	cmd := &cobra.Command{
		Use:   "tokenize MODEL TEXT",
		Short: "Show the token ids and pieces of a text",
		Long: "tokenize encodes TEXT (or standard input when TEXT is -) with MODEL's tokenizer\n" +
			"and prints one line per token: id, piece as stored, and the text it decodes to.\n" +
			"MODEL is a path to a .gguf file or a name found in FOLIO_MODELS_PATH.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			text := args[1]
			if text == "-" {
				b, err := io.ReadAll(cmd.InOrStdin())
				if err != nil {
					return fmt.Errorf("tokenize: read stdin: %w", err)
				}
				text = string(b)
			}
			path, err := locate(args[0])
			if err != nil {
				return err
			}
			f, err := gguf.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			tok, err := tokenizer.New(f)
			if err != nil {
				return err
			}
			ids := tok.Encode(text, tokenizer.EncodeOptions{AddSpecial: bos, ParseSpecial: special})
			out := cmd.OutOrStdout()
			if asJSON {
				pieces := make([]string, len(ids))
				for i, id := range ids {
					pieces[i] = tok.Piece(id)
				}
				b, err := marshal(map[string]any{"ids": ids, "pieces": pieces})
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(out, "%s\n", b)
				return err
			}
			for _, id := range ids {
				dec := tok.TokenBytes(id, tokenizer.DecodeOptions{Special: true})
				fmt.Fprintf(out, "%8d  %-24s %s\n", id, strconv.Quote(tok.Piece(id)), strconv.Quote(string(dec)))
			}
			fmt.Fprintf(out, "%d tokens\n", len(ids))
			return nil
		},
	}
	cmd.Flags().BoolVar(&bos, "bos", false, "add BOS/EOS as the model's tokenizer asks (add_bos_token, add_eos_token)")
	cmd.Flags().BoolVar(&special, "special", false, `parse special-token text such as "<|eot_id|>" as single tokens`)
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"ids": [...], "pieces": [...]}`)
	return cmd
}
