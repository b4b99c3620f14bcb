package cmd

import (
	"context"
	"io"

	"github.com/ollama/ollama/api"
	"github.com/spf13/cobra"

	"folio/installer"
)

func newPushCmd() *cobra.Command {
	var insecure bool
	cmd := &cobra.Command{
		Use:   "push MODEL",
		Short: "Upload a model to a registry",
		Long: "push uploads the model MODEL, named host/namespace/model[:tag], to that registry, through\n" +
			"the server at FOLIO_HOST when one answers, else from FOLIO_HOME in this process. Blobs the\n" +
			"registry has already are skipped; folio sends no credentials, so the registry must take\n" +
			"anonymous pushes (a local one: --insecure). folio cp gives a model such a name.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return pushModel(cmd.Context(), args[0], insecure, cmd.ErrOrStderr())
		},
	}
	cmd.Flags().BoolVar(&insecure, "insecure", false, "talk plain HTTP to the registry (a local one)")
	return cmd
}

// pushModel pushes through the server at FOLIO_HOST when one answers,
// else in this process, with pull's progress bars.
func pushModel(ctx context.Context, model string, insecure bool, out io.Writer) error {
	if _, err := installer.PushName(model); err != nil {
		return err
	}
	view := newProgressView(out)
	defer view.finish()
	if c := hostClient(); serverAnswers(ctx, c) {
		err := c.Push(ctx, &api.PushRequest{Model: model, Insecure: insecure}, func(p api.ProgressResponse) error {
			view.update(installer.Progress{Status: p.Status, Digest: p.Digest, Total: p.Total, Completed: p.Completed})
			return nil
		})
		return serverErr(err)
	}
	opt, done, err := localInstall()
	if err != nil {
		return err
	}
	defer done()
	opt.Insecure, opt.Progress = insecure, view.update
	return installer.Push(ctx, model, opt)
}
