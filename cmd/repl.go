package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/ollama/ollama/api"
)

// repl is `folio run`'s chat: lines from in, replies streamed to out, the
// conversation kept between prompts and sent whole with each one (the
// server's prefix cache makes the repeat cheap).
type repl struct {
	client  *api.Client
	model   string
	opts    map[string]any // request options: run's flags, then /set parameter
	system  string         // /set system
	msgs    []api.Message  // the conversation so far, system message first
	verbose bool           // print token counts and speeds after each reply

	in  lineReader
	out io.Writer
	// interrupts delivers Ctrl-C (SIGINT): it stops the reply being
	// streamed, or the load at the start.
	interrupts <-chan os.Signal
}

// lineReader is where the chat's lines come from.
type lineReader interface {
	// ReadLine shows prompt and returns the next line, without its end.
	// A paste of several lines comes back as one, with its newlines. It
	// returns errInterrupt for Ctrl-C and io.EOF at the end (Ctrl-D).
	ReadLine(prompt string) (string, error)
}

var errInterrupt = errors.New("interrupt")

const (
	promptMain = ">>> "
	promptMore = "... "
	multiQuote = `"""`
)

// run loads the model, then reads and answers lines until /bye or the end
// of input.
func (r *repl) run(ctx context.Context) error {
	if r.opts == nil {
		r.opts = map[string]any{}
	}
	stopped, err := r.interruptible(ctx, func(ctx context.Context) error {
		return r.client.Generate(ctx, &api.GenerateRequest{Model: r.model}, func(api.GenerateResponse) error { return nil })
	})
	if stopped {
		return nil // Ctrl-C while loading: leave
	}
	if err != nil {
		return serverErr(err)
	}
	var multi []string // the lines of a """ message being typed
	inMulti := false
	for {
		prompt := promptMain
		if inMulti {
			prompt = promptMore
		}
		line, err := r.in.ReadLine(prompt)
		switch {
		case errors.Is(err, io.EOF):
			fmt.Fprintln(r.out)
			return nil
		case errors.Is(err, errInterrupt):
			fmt.Fprintln(r.out, "Use Ctrl + d or /bye to exit.")
			multi, inMulti = nil, false
			continue
		case err != nil:
			return err
		}
		// """ opens and closes a multi-line message; text on the lines
		// of the quotes belongs to it
		if inMulti {
			before, done := strings.CutSuffix(line, multiQuote)
			if before != "" || !done {
				multi = append(multi, before)
			}
			if !done {
				continue
			}
			line, multi, inMulti = strings.Join(multi, "\n"), nil, false
		} else if rest, ok := strings.CutPrefix(line, multiQuote); ok {
			if body, closed := strings.CutSuffix(rest, multiQuote); closed && rest != "" {
				line = body
			} else {
				if rest != "" {
					multi = append(multi, rest)
				}
				inMulti = true
				continue
			}
		} else if strings.HasPrefix(line, "/") && !strings.Contains(line, "\n") {
			if bye := r.command(ctx, line); bye {
				return nil
			}
			continue
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		if err := r.send(ctx, line); err != nil {
			return err
		}
	}
}

// send adds a user message, streams the reply and keeps it. Ctrl-C keeps
// the part of the reply that was shown; a reply stopped before its first
// word takes its question with it. An error from the server is shown and
// the message dropped; only a broken output ends the chat.
func (r *repl) send(ctx context.Context, text string) error {
	r.msgs = append(r.msgs, api.Message{Role: "user", Content: text})
	var reply strings.Builder
	var last api.ChatResponse
	var werr error
	stopped, err := r.interruptible(ctx, func(ctx context.Context) error {
		req := &api.ChatRequest{Model: r.model, Messages: r.msgs, Options: r.opts}
		return r.client.Chat(ctx, req, func(resp api.ChatResponse) error {
			if ctx.Err() != nil {
				return ctx.Err() // stopped: show nothing more
			}
			last = resp
			reply.WriteString(resp.Message.Content)
			if _, werr = io.WriteString(r.out, resp.Message.Content); werr != nil {
				return werr
			}
			return nil
		})
	})
	switch {
	case werr != nil:
		return werr
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil && !stopped:
		r.msgs = r.msgs[:len(r.msgs)-1]
		if reply.Len() > 0 {
			fmt.Fprintln(r.out)
		}
		fmt.Fprintf(r.out, "Error: %v\n\n", serverErr(err))
		return nil
	}
	if reply.Len() == 0 && stopped {
		r.msgs = r.msgs[:len(r.msgs)-1]
	} else {
		r.msgs = append(r.msgs, api.Message{Role: "assistant", Content: reply.String()})
	}
	fmt.Fprint(r.out, "\n\n")
	if r.verbose && !stopped {
		printMetrics(r.out, last.Metrics)
	}
	return nil
}

// interruptible runs f with a context that Ctrl-C cancels, and says
// whether it did. A Ctrl-C that came before f started is dropped: it was
// meant for something else.
func (r *repl) interruptible(parent context.Context, f func(context.Context) error) (stopped bool, err error) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	for drained := false; !drained; {
		select {
		case <-r.interrupts:
		default:
			drained = true
		}
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-r.interrupts:
			cancel()
		case <-done:
		}
	}()
	err = f(ctx)
	return ctx.Err() != nil && parent.Err() == nil, err
}

// command runs a /command; bye says the chat is over.
func (r *repl) command(ctx context.Context, line string) (bye bool) {
	args := strings.Fields(line)
	switch args[0] {
	case "/bye", "/exit":
		return true
	case "/clear":
		r.msgs = nil
		if r.system != "" {
			r.msgs = []api.Message{{Role: "system", Content: r.system}}
		}
		fmt.Fprintln(r.out, "Cleared session context")
	case "/set":
		r.set(args[1:], line)
	case "/show":
		r.show(ctx, args[1:])
	case "/?", "/help":
		topic := ""
		if len(args) > 1 {
			topic = strings.TrimPrefix(args[1], "/")
		}
		r.help(topic)
	default:
		fmt.Fprintf(r.out, "Unknown command '%s'. Type /? for help\n", args[0])
	}
	return false
}

func (r *repl) set(args []string, line string) {
	if len(args) == 0 {
		r.help("set")
		return
	}
	switch args[0] {
	case "parameter":
		if len(args) < 3 {
			r.help("parameters")
			return
		}
		p, err := api.FormatParams(map[string][]string{args[1]: args[2:]})
		if err != nil {
			fmt.Fprintf(r.out, "Couldn't set parameter: %q\n", err)
			return
		}
		r.opts[args[1]] = p[args[1]]
		fmt.Fprintf(r.out, "Set parameter '%s' to '%s'\n", args[1], strings.Join(args[2:], ", "))
	case "system":
		_, text, _ := strings.Cut(line, "system")
		r.system = strings.TrimSpace(text)
		msg := api.Message{Role: "system", Content: r.system}
		if len(r.msgs) > 0 && r.msgs[0].Role == "system" {
			r.msgs[0] = msg
		} else {
			r.msgs = append([]api.Message{msg}, r.msgs...)
		}
		fmt.Fprintln(r.out, "Set system message.")
	case "verbose":
		r.verbose = true
		fmt.Fprintln(r.out, "Set 'verbose' mode.")
	case "quiet":
		r.verbose = false
		fmt.Fprintln(r.out, "Set 'quiet' mode.")
	default:
		fmt.Fprintf(r.out, "Unknown command '/set %s'. Type /? for help\n", args[0])
	}
}

func (r *repl) show(ctx context.Context, args []string) {
	if len(args) == 0 {
		r.help("show")
		return
	}
	resp, err := r.client.Show(ctx, &api.ShowRequest{Model: r.model})
	if err != nil {
		fmt.Fprintf(r.out, "Error: %v\n", serverErr(err))
		return
	}
	switch args[0] {
	case "info":
		showModelInfo(r.out, resp)
	case "parameters":
		fmt.Fprintln(r.out, "User defined parameters:")
		if len(r.opts) == 0 {
			fmt.Fprintln(r.out, "  none: the server's defaults apply (/set parameter NAME VALUE)")
		}
		keys := make([]string, 0, len(r.opts))
		for k := range r.opts {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(r.out, "  %-30s %v\n", k, r.opts[k])
		}
		fmt.Fprintln(r.out)
	case "system":
		if r.system == "" {
			fmt.Fprintln(r.out, "No system message was specified for this model.")
		} else {
			fmt.Fprintln(r.out, r.system)
		}
	case "template":
		if resp.Template == "" {
			fmt.Fprintln(r.out, "No prompt template was specified for this model.")
		} else {
			fmt.Fprintln(r.out, resp.Template)
		}
	case "modelfile":
		fmt.Fprintln(r.out, resp.Modelfile)
	default:
		fmt.Fprintf(r.out, "Unknown command '/show %s'. Type /? for help\n", args[0])
	}
}

// showModelInfo prints a model's headline facts as Ollama's /show info does.
func showModelInfo(w io.Writer, resp *api.ShowResponse) {
	arch, _ := resp.ModelInfo["general.architecture"].(string)
	tw := tabwriter.NewWriter(w, 0, 0, 4, ' ', 0)
	fmt.Fprintln(tw, "  Model")
	row := func(k string, v any) {
		if v != nil && v != "" {
			fmt.Fprintf(tw, "    %s\t%v\n", k, v)
		}
	}
	row("architecture", arch)
	row("parameters", resp.Details.ParameterSize)
	row("context length", resp.ModelInfo[arch+".context_length"])
	row("embedding length", resp.ModelInfo[arch+".embedding_length"])
	row("quantization", resp.Details.QuantizationLevel)
	fmt.Fprintln(tw)
	if len(resp.Capabilities) > 0 {
		fmt.Fprintln(tw, "  Capabilities")
		for _, c := range resp.Capabilities {
			fmt.Fprintf(tw, "    %s\n", c)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

// printMetrics writes a reply's figures as Ollama's --verbose does.
func printMetrics(w io.Writer, m api.Metrics) {
	fmt.Fprintf(w, "total duration:       %v\n", m.TotalDuration)
	fmt.Fprintf(w, "load duration:        %v\n", m.LoadDuration)
	fmt.Fprintf(w, "prompt eval count:    %d token(s)\n", m.PromptEvalCount)
	if m.PromptEvalDuration > 0 {
		fmt.Fprintf(w, "prompt eval duration: %v\n", m.PromptEvalDuration)
		fmt.Fprintf(w, "prompt eval rate:     %.2f tokens/s\n", float64(m.PromptEvalCount)/m.PromptEvalDuration.Seconds())
	}
	fmt.Fprintf(w, "eval count:           %d token(s)\n", m.EvalCount)
	if m.EvalDuration > 0 {
		fmt.Fprintf(w, "eval duration:        %v\n", m.EvalDuration)
		fmt.Fprintf(w, "eval rate:            %.2f tokens/s\n", float64(m.EvalCount)/m.EvalDuration.Seconds())
	}
	fmt.Fprintln(w)
}

func (r *repl) help(topic string) {
	var text string
	switch topic {
	case "set":
		text = `Available Commands:
  /set parameter ...     Set a parameter
  /set system <string>   Set system message
  /set verbose           Show LLM stats
  /set quiet             Disable LLM stats
`
	case "parameters":
		text = `Available Parameters:
  /set parameter seed <int>             Random number seed
  /set parameter num_predict <int>      Max number of tokens to predict
  /set parameter top_k <int>            Pick from top k num of tokens
  /set parameter top_p <float>          Pick token based on sum of probabilities
  /set parameter min_p <float>          Pick token based on top token probability * min_p
  /set parameter num_ctx <int>          Set the context size
  /set parameter temperature <float>    Set creativity level
  /set parameter repeat_penalty <float> How strongly to penalize repetitions
  /set parameter repeat_last_n <int>    Set how far back to look for repetitions
  /set parameter stop <string> <string> ...   Set the stop parameters
`
	case "show":
		text = `Available Commands:
  /show info         Show details for this model
  /show modelfile    Show Modelfile for this model
  /show parameters   Show parameters for this session
  /show system       Show system message
  /show template     Show prompt template
`
	case "shortcut", "shortcuts":
		text = `Available keyboard shortcuts:
  Ctrl + a            Move to the beginning of the line (Home)
  Ctrl + e            Move to the end of the line (End)
  Ctrl + k            Delete the sentence after the cursor
  Ctrl + u            Delete the sentence before the cursor
  Ctrl + w            Delete the word before the cursor
  Up, Down            Earlier and later lines

  Ctrl + l            Clear the screen
  Ctrl + c            Stop the model from responding
  Ctrl + d            Exit folio (/bye)
`
	default:
		text = `Available Commands:
  /set            Set session variables
  /show           Show model information
  /clear          Clear session context
  /bye            Exit
  /?, /help       Help for a command
  /? shortcuts    Help for keyboard shortcuts

Use """ to begin a multi-line message.
`
	}
	fmt.Fprintln(r.out, text)
}
