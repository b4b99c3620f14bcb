package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ollama/ollama/api"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"folio/installer"
	"folio/models"
)

func newPullCmd() *cobra.Command {
	var insecure bool
	var name string
	cmd := &cobra.Command{
		Use:   "pull MODEL",
		Short: "Download a model from a registry, Hugging Face or a URL",
		Long: "pull downloads MODEL into FOLIO_HOME (~/.folio) and registers it, through the server\n" +
			"at FOLIO_HOST when one answers, else in this process. MODEL is\n" +
			"  [host/][namespace/]model[:tag]  from an Ollama registry (registry.ollama.ai/library/…:latest)\n" +
			"  hf.co/ORG/REPO[:QUANT]          a GGUF file of a Hugging Face repository (Q4_K_M by default;\n" +
			"                                  FOLIO_HF_ENDPOINT serves hf.co/ names from another host)\n" +
			"  https://…/file.gguf             a plain URL (its sha256 is computed: no published one to check)\n" +
			"Downloads resume where they stopped, and every blob is checked against its sha256\n" +
			"before the model is registered.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return pullModel(cmd.Context(), args[0], insecure, name, cmd.ErrOrStderr())
		},
	}
	cmd.Flags().BoolVar(&insecure, "insecure", false, "talk plain HTTP to the registry (a local one)")
	cmd.Flags().StringVar(&name, "name", "", "the name a URL pull is registered as (default: the file's name)")
	return cmd
}

// pullModel pulls through the server at FOLIO_HOST when one answers (not
// for --name, which the API has no field for), else in this process.
func pullModel(ctx context.Context, model string, insecure bool, name string, out io.Writer) error {
	view := newProgressView(out)
	defer view.finish()
	if c := hostClient(); name == "" && serverAnswers(ctx, c) {
		err := c.Pull(ctx, &api.PullRequest{Model: model, Insecure: insecure}, func(p api.ProgressResponse) error {
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
	opt.Insecure, opt.Name, opt.Progress = insecure, name, view.update
	_, err = installer.Pull(ctx, model, opt)
	return err
}

// localInstall is the installer of FOLIO_HOME, its registry open.
func localInstall() (installer.Options, func(), error) {
	home, err := folioHome()
	if err != nil {
		return installer.Options{}, nil, err
	}
	st, err := openRegistry(slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return installer.Options{}, nil, err
	}
	return installOptions(home, st), func() { st.Close() }, nil
}

// locateModel finds a model file as models.Locate does, then in the
// registry of FOLIO_HOME (the models folio pull and create made). An
// absent registry is not created.
func locateModel(name string) (string, error) {
	path, err := locate(name)
	if err == nil {
		return path, nil
	}
	home, herr := folioHome()
	if herr != nil {
		return "", err
	}
	if _, serr := os.Stat(filepath.Join(home, "folio.db")); serr != nil {
		return "", err
	}
	opt, done, serr := localInstall()
	if serr != nil {
		return "", err
	}
	defer done()
	if m, merr := opt.Store.Model(installer.CanonicalName(name)); merr == nil {
		return m.Path, nil
	}
	return "", err
}

// pullMissing is run's hook: a model that neither the server (c) nor this
// process (c nil) has is pulled first, as Ollama's run does. Paths and
// names that are not model names are left to the caller's error.
func pullMissing(ctx context.Context, c *api.Client, name string, insecure bool, out io.Writer) error {
	if _, err := installer.ParseName(name); err != nil || strings.HasSuffix(strings.ToLower(name), ".gguf") {
		return nil
	}
	var missing error
	if c != nil {
		var se api.StatusError
		_, missing = c.Show(ctx, &api.ShowRequest{Model: name})
		if !errors.As(missing, &se) || se.StatusCode != http.StatusNotFound {
			return nil
		}
		missing = serverErr(missing)
		// The server names none of its folders; this process names its own.
		if _, lerr := locate(name); errors.Is(lerr, models.ErrNotFound) {
			missing = fmt.Errorf("%w (here, %s)", missing, strings.TrimPrefix(lerr.Error(), models.ErrNotFound.Error()+": "))
		}
	} else if _, missing = locateModel(name); !errors.Is(missing, models.ErrNotFound) {
		return nil
	}
	if err := pullModel(ctx, name, insecure, "", out); err != nil {
		return fmt.Errorf("%w; pulling it failed: %v", missing, err)
	}
	return nil
}

// progressView shows pull, push and create progress: on a terminal one bar per
// layer (bytes, speed, time left) under the status lines, redrawn in
// place; otherwise plain lines, a layer's at each quarter.
type progressView struct {
	out      io.Writer
	tty      bool
	width    int                                 // terminal columns
	rows     []string                            // statuses in order of first appearance
	bars     map[string]*progressbar.ProgressBar // rows that are layers
	quarter  map[string]int64                    // plain: last quarter printed per layer
	drawn    int                                 // tty: lines on screen
	lastDraw time.Time
}

func newProgressView(out io.Writer) *progressView {
	v := &progressView{out: out, bars: map[string]*progressbar.ProgressBar{}, quarter: map[string]int64{}}
	if f, ok := out.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		v.tty = true
		v.width, _, _ = term.GetSize(int(f.Fd()))
	}
	return v
}

func (v *progressView) update(p installer.Progress) {
	bar, isBar := v.bars[p.Status]
	isNew := !isBar && !slices.Contains(v.rows, p.Status)
	if isNew {
		v.rows = append(v.rows, p.Status)
	}
	if !isBar && p.Total > 0 && (strings.HasPrefix(p.Status, "pulling ") || strings.HasPrefix(p.Status, "pushing ")) {
		bar = progressbar.NewOptions64(p.Total, progressbar.OptionSetWriter(io.Discard),
			progressbar.OptionSetDescription(p.Status), progressbar.OptionShowBytes(true),
			progressbar.OptionShowTotalBytes(true), progressbar.OptionShowCount(), progressbar.OptionSetWidth(25),
			progressbar.OptionSetPredictTime(true), progressbar.OptionThrottle(0))
		v.bars[p.Status], isBar = bar, true
	}
	if isBar {
		bar.Set64(p.Completed)
	}
	if !v.tty {
		v.plain(p, isBar, isNew)
		return
	}
	if isNew || (isBar && p.Completed >= p.Total) || time.Since(v.lastDraw) >= 100*time.Millisecond {
		v.draw()
	}
}

// plain prints a new status, and a layer's progress at 0, 25, 50, 75 and
// 100 percent.
func (v *progressView) plain(p installer.Progress, isBar, isNew bool) {
	if !isBar {
		if isNew {
			fmt.Fprintln(v.out, p.Status)
		}
		return
	}
	q := p.Completed * 4 / p.Total
	if last, ok := v.quarter[p.Status]; ok && q <= last {
		return
	}
	v.quarter[p.Status] = q
	fmt.Fprintf(v.out, "%s: %d%% of %s\n", p.Status, q*25, humanBytes(p.Total))
}

// draw rewrites every row in place.
func (v *progressView) draw() {
	var b strings.Builder
	if v.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", v.drawn)
	}
	for _, r := range v.rows {
		line := r
		if bar, ok := v.bars[r]; ok {
			line = strings.TrimSpace(strings.TrimLeft(bar.String(), "\r"))
		}
		if r := []rune(line); v.width > 1 && len(r) >= v.width { // a wrapped line would break the redraw
			line = string(r[:v.width-1])
		}
		b.WriteString("\r\x1b[2K" + line + "\n")
	}
	io.WriteString(v.out, b.String())
	v.drawn, v.lastDraw = len(v.rows), time.Now()
}

func (v *progressView) finish() {
	if v.tty && len(v.rows) > 0 {
		v.draw()
	}
}
