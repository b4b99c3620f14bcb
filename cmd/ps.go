package cmd

import (
	"strconv"
	"strings"
	"time"

	"github.com/ollama/ollama/format"
	"github.com/spf13/cobra"
)

func newPsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "ps [PREFIX]",
		Short: "List the models a server has loaded",
		Long:  "ps asks the server at FOLIO_HOST which models it holds in memory, their context size and when they unload.",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := needServer(cmd.Context())
			if err != nil {
				return err
			}
			resp, err := c.ListRunning(cmd.Context())
			if err != nil {
				return serverErr(err)
			}
			var rows [][]string
			for _, m := range resp.Models {
				if len(args) > 0 && !strings.HasPrefix(strings.ToLower(m.Name), strings.ToLower(args[0])) {
					continue
				}
				proc := "100% CPU"
				if m.SizeVRAM > 0 {
					proc = strconv.Itoa(int(100*m.SizeVRAM/max(m.Size, 1))) + "% GPU"
				}
				until := format.HumanTime(m.ExpiresAt, "Never")
				if !m.ExpiresAt.IsZero() && time.Since(m.ExpiresAt) > 0 {
					until = "Stopping..."
				}
				rows = append(rows, []string{m.Name, shortDigest(m.Digest), format.HumanBytes(m.Size), proc,
					strconv.Itoa(m.ContextLength), until})
			}
			return table(cmd.OutOrStdout(), []string{"NAME", "ID", "SIZE", "PROCESSOR", "CONTEXT", "UNTIL"}, rows)
		},
	}
}
