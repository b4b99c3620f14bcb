package cmd

import (
	"github.com/ollama/ollama/api"
	"github.com/spf13/cobra"
)

func newStopCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "stop MODEL",
		Short: "Unload a model from a server",
		Long:  "stop asks the server at FOLIO_HOST to unload MODEL now (a request with keep_alive 0 and no prompt).",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := needServer(cmd.Context())
			if err != nil {
				return err
			}
			return modelErr(unload(cmd, c, args[0]), "stop", args[0])
		},
	}
}

// unload asks the server to unload name: keep_alive 0 and no prompt.
func unload(cmd *cobra.Command, c *api.Client, name string) error {
	req := &api.GenerateRequest{Model: name, KeepAlive: &api.Duration{Duration: 0}}
	return c.Generate(cmd.Context(), req, func(api.GenerateResponse) error { return nil })
}
