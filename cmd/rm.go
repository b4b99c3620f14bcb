package cmd

import (
	"fmt"

	"github.com/ollama/ollama/api"
	"github.com/spf13/cobra"
)

func newRmCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "rm MODEL...",
		Short: "Remove models from a server",
		Long: "rm asks the server at FOLIO_HOST to unload and delete each MODEL. folio deletes the\n" +
			"names made with folio cp; GGUF files in FOLIO_MODELS_PATH are yours to delete.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := needServer(cmd.Context())
			if err != nil {
				return err
			}
			for _, name := range args {
				if err := c.Delete(cmd.Context(), &api.DeleteRequest{Model: name}); err != nil {
					return modelErr(err, "delete", name)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "deleted '%s'\n", name)
			}
			return nil
		},
	}
}
