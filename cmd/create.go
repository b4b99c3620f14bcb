package cmd

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"

	"github.com/ollama/ollama/api"
	"github.com/spf13/cobra"

	"folio/installer"
	"folio/models"
)

func newCreateCmd() *cobra.Command {
	var file string
	var link bool
	cmd := &cobra.Command{
		Use:   "create NAME [-f Modelfile]",
		Short: "Create a model from a Modelfile",
		Long: "create makes the model NAME from a Modelfile (default ./Modelfile):\n" +
			"  FROM <model or file.gguf>   the weights: a registered model (pulled if missing) or a GGUF file\n" +
			"  PARAMETER <name> <value>    an Ollama option (temperature, stop, num_ctx, ...)\n" +
			"  TEMPLATE, SYSTEM, LICENSE   text, in \"quotes\" or \"\"\"triple quotes\"\"\" for several lines\n" +
			"  MESSAGE <role> <text>       a message of the conversation's start (system, user, assistant)\n" +
			"A GGUF file is copied into FOLIO_HOME; --link registers it where it is instead\n" +
			"(it must then stay unchanged). The model is created through the server at FOLIO_HOST\n" +
			"when one answers (uploading the file), else in this process.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := os.Open(file)
			if err != nil {
				return fmt.Errorf("%w (give the Modelfile with -f)", err)
			}
			mf, err := installer.ParseModelfile(f)
			f.Close()
			if err != nil {
				return fmt.Errorf("%s %w", file, err)
			}
			req, err := mf.Request(args[0], filepath.Dir(file))
			if err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			req.Link = link
			return createModel(cmd.Context(), req, cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "Modelfile", "the Modelfile")
	cmd.Flags().BoolVar(&link, "link", false, "register FROM's GGUF file where it is instead of copying it")
	return cmd
}

// createModel creates through the server at FOLIO_HOST when one answers
// (not with --link: the file is this machine's), else in this process.
func createModel(ctx context.Context, req installer.CreateRequest, out io.Writer) error {
	view := newProgressView(out)
	defer view.finish()
	if c := hostClient(); !req.Link && serverAnswers(ctx, c) {
		ar := &api.CreateRequest{Model: req.Name, From: req.From, Files: req.Files, Template: req.Template,
			System: req.System, Parameters: req.Parameters, Messages: req.Messages}
		if len(req.License) > 0 {
			ar.License = req.License
		}
		if req.FromFile != "" {
			if err := installer.CheckFromFile(req.FromFile); err != nil {
				return err
			}
			view.update(installer.Progress{Status: "uploading " + filepath.Base(req.FromFile)})
			digest, err := uploadBlob(ctx, c, req.FromFile)
			if err != nil {
				return err
			}
			ar.Files = map[string]string{filepath.Base(req.FromFile): digest}
		}
		err := c.Create(ctx, ar, func(p api.ProgressResponse) error {
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
	opt.Progress = view.update
	_, err = installer.Create(ctx, req, opt)
	return err
}

// uploadBlob sends a file to the server's /api/blobs unless it has it
// already, and returns its digest.
func uploadBlob(ctx context.Context, c *api.Client, path string) (string, error) {
	sum, _, err := models.FileDigest(path)
	if err != nil {
		return "", err
	}
	digest := "sha256:" + sum
	u := url.URL{Scheme: "http", Host: hostAddr(), Path: "/api/blobs/" + digest}
	if req, err := http.NewRequestWithContext(ctx, http.MethodHead, u.String(), nil); err == nil {
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return digest, nil
			}
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return digest, serverErr(c.CreateBlob(ctx, digest, f))
}
