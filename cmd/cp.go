package cmd

import (
	"fmt"

	"github.com/ollama/ollama/api"
	"github.com/spf13/cobra"
)

func newCpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "cp SOURCE DESTINATION",
		Short: "Give a model another name on a server",
		Long:  "cp asks the server at FOLIO_HOST to make DESTINATION a name of the model SOURCE.",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := needServer(cmd.Context())
			if err != nil {
				return err
			}
			if err := c.Copy(cmd.Context(), &api.CopyRequest{Source: args[0], Destination: args[1]}); err != nil {
				return modelErr(err, "copy", args[0])
			}
			fmt.Fprintf(cmd.OutOrStdout(), "copied '%s' to '%s'\n", args[0], args[1])
			return nil
		},
	}
}
