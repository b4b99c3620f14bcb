// Package cmd holds folio's command line: thin cobra commands over the
// packages that do the work.
package cmd

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// Version is folio's version, set at build time with
// -ldflags "-X folio/cmd.Version=v0.1.0".
var Version = "0.0.0-dev"

var rootCmd = &cobra.Command{
	Use:           "folio",
	Short:         "Run open-weight LLMs on this workstation",
	Long:          "folio runs GGUF models locally with a paged KV cache and a persistent prefix cache.",
	SilenceUsage:  true,
	SilenceErrors: true,
}

// devCmd groups tools for folio's developers: synthetic models, tokenizer probes.
var devCmd = &cobra.Command{
	Use:   "dev",
	Short: "Developer tools (synthetic models and probes)",
}

func init() {
	rootCmd.AddCommand(devCmd)
}

// Execute runs the command line and prints an error, if any, to stderr.
func Execute() error {
	err := rootCmd.Execute()
	if err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
	}
	return err
}
