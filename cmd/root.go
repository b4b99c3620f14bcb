// Package cmd holds folio's command line: thin cobra commands over the
// packages that do the work.
package cmd

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"folio/gpu/cpu"
	"folio/internal/envconfig"
)

// Version is folio's version, set at build time with
// -ldflags "-X folio/cmd.Version=v0.1.0".
var Version = "0.0.0-dev"

// NewRoot builds folio's whole command tree. Each command comes from its
// own constructor and holds its flags in that constructor's variables, so
// two trees share nothing (tests build one per run).
func NewRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "folio",
		Short:         "Run open-weight LLMs on this workstation",
		Long:          "folio runs GGUF models locally with a paged KV cache and a persistent prefix cache.",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			if err := cpu.SetLevel(envconfig.Get("FOLIO_CPU_LEVEL")); err != nil {
				return fmt.Errorf("FOLIO_CPU_LEVEL: %w", err)
			}
			if envconfig.Get("GOMAXPROCS") == "" {
				cpu.SpareProc(cpu.ThreadCount(0)) // one P idle beside the CPU backend's threads
			}
			return nil
		},
	}
	root.AddCommand(
		newServeCmd(),
		newRunCmd(),
		newShowCmd(),
		newListCmd(),
		newPsCmd(),
		newStopCmd(),
		newPullCmd(),
		newPushCmd(),
		newCreateCmd(),
		newCpCmd(),
		newRmCmd(),
		newBenchCmd(),
		newGPUCmd(),
		newDevCmd(),
		newVersionCmd(),
	)
	return root
}

// newDevCmd groups tools for folio's developers: synthetic models, tokenizer probes.
func newDevCmd() *cobra.Command {
	dev := &cobra.Command{
		Use:   "dev",
		Short: "Developer tools (synthetic models and probes)",
	}
	dev.AddCommand(newSynthCmd(), newTokenizeCmd(), newLogitsCmd(), newRenderTemplateCmd(), newKVSimCmd())
	return dev
}

// Execute runs the command line and prints an error, if any, to stderr.
func Execute() error {
	err := NewRoot().Execute()
	if err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
	}
	return err
}
