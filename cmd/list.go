package cmd

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/format"
	"github.com/spf13/cobra"
)

func newListCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "list [PREFIX]",
		Aliases: []string{"ls"},
		Short:   "List the models a server can run",
		Long:    "list asks the server at FOLIO_HOST for the models it can run (the GGUF files of its FOLIO_MODELS_PATH and the names made with folio cp; files of an architecture it does not run, or vocab-only, are left out).",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := needServer(cmd.Context())
			if err != nil {
				return err
			}
			resp, err := c.List(cmd.Context())
			if err != nil {
				return serverErr(err)
			}
			var rows [][]string
			for _, m := range resp.Models {
				if len(args) == 0 || strings.HasPrefix(strings.ToLower(m.Name), strings.ToLower(args[0])) {
					rows = append(rows, []string{m.Name, shortDigest(m.Digest), format.HumanBytes(m.Size), format.HumanTime(m.ModifiedAt, "Never")})
				}
			}
			return table(cmd.OutOrStdout(), []string{"NAME", "ID", "SIZE", "MODIFIED"}, rows)
		},
	}
}

// table writes rows under a header as Ollama's CLI does: left-aligned
// columns four spaces apart, no borders.
func table(w io.Writer, header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 4, ' ', 0)
	for _, r := range append([][]string{header}, rows...) {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// shortDigest is a model's ID: the first 12 hex digits of its sha256.
func shortDigest(d string) string {
	d = strings.TrimPrefix(d, "sha256:")
	return d[:min(12, len(d))]
}

// modelErr says "couldn't find model" for a name the server does not know.
func modelErr(err error, verb, name string) error {
	var se api.StatusError
	if errors.As(err, &se) && se.StatusCode == http.StatusNotFound {
		return fmt.Errorf("couldn't find model %q to %s (folio list shows the server's models)", name, verb)
	}
	return serverErr(err)
}
