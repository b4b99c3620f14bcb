package cmd

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"folio/models/template"
)

func newRenderTemplateCmd() *cobra.Command {
	var casePath, now string
	cmd := &cobra.Command{
		Use:   "render-template FILE.jinja --case CASE.json",
		Short: "Render a chat template for one conversation",
		Long: "render-template renders the Jinja chat template in FILE.jinja the way Hugging Face\n" +
			"transformers does and prints the result exactly, with no newline added. CASE.json holds\n" +
			`{"messages": [...], "tools": [...], "add_generation_prompt": true, "bos_token": "<s>",` + "\n" +
			`"eos_token": "</s>", "vars": {"enable_thinking": false}}; a null or missing token is left` + "\n" +
			"undefined, and vars are further template variables. A template that raises (or fails)\n" +
			"exits non-zero with its message.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			data, err := os.ReadFile(casePath)
			if err != nil {
				return err
			}
			ctx, err := template.DecodeCase(data)
			if err != nil {
				return fmt.Errorf("%s: %w", casePath, err)
			}
			if now != "" {
				if ctx.Now, err = parseNow(now); err != nil {
					return err
				}
			}
			out, err := template.Render(string(src), ctx)
			if err != nil {
				return err
			}
			_, err = io.WriteString(cmd.OutOrStdout(), out)
			return err
		},
	}
	cmd.Flags().StringVar(&casePath, "case", "", "JSON file with messages, tools, add_generation_prompt, bos_token, eos_token (required)")
	cmd.Flags().StringVar(&now, "now", "", "the date strftime_now formats, as 2024-07-26 or RFC 3339 (default: now)")
	_ = cmd.MarkFlagRequired("case")
	return cmd
}

func parseNow(s string) (time.Time, error) {
	for _, layout := range []string{time.DateOnly, time.DateTime, time.RFC3339} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("--now %q: want a date such as 2024-07-26 or an RFC 3339 time", s)
}
