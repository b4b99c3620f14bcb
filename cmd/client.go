package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/ollama/ollama/api"

	"folio/runner"
	"folio/server"
)

// The commands talk to a server through Ollama's own client: the one at
// FOLIO_HOST when it answers, or, for run, one started in this process.

// probeTimeout bounds the check for a server at FOLIO_HOST: a refused
// connection answers at once; a host that drops packets is given up on.
const probeTimeout = time.Second

// hostClient is a client for FOLIO_HOST (it does not check that a server
// answers).
func hostClient() *api.Client {
	return api.NewClient(&url.URL{Scheme: "http", Host: hostAddr()}, http.DefaultClient)
}

// serverAnswers reports whether a server answers HEAD / at c's address.
func serverAnswers(ctx context.Context, c *api.Client) bool {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	return c.Heartbeat(ctx) == nil
}

// needServer is the client for FOLIO_HOST, or an error that says how to
// start a server: list, ps, stop, rm and cp have nothing to ask otherwise.
func needServer(ctx context.Context) (*api.Client, error) {
	c := hostClient()
	if !serverAnswers(ctx, c) {
		return nil, fmt.Errorf("no folio server answers at %s: start one with folio serve (or point FOLIO_HOST at one)", hostAddr())
	}
	return c, nil
}

// serverErr is a server's error by its message alone: api.StatusError
// puts the HTTP status before it.
func serverErr(err error) error {
	var se api.StatusError
	if errors.As(err, &se) && se.ErrorMessage != "" {
		return errors.New(se.ErrorMessage)
	}
	return err
}

// localServer is a server in this process, reached through an in-memory
// listener (no socket is opened): run's engine when no server answers.
type localServer struct {
	srv *server.Server
	hs  *http.Server
	ln  *pipeListener
}

// startLocal serves the model MODEL names (found as show finds it) with
// load options opt. Logs are dropped: the terminal is the conversation's.
func startLocal(name string, opt runner.LoadOptions) (*api.Client, *localServer, error) {
	path, err := locateModel(name) // installer hook (pull.go): models.Locate, then FOLIO_HOME's registry
	if err != nil {
		return nil, nil, err
	}
	cfg := server.Config{Registry: &oneModel{name: name, path: path}, Version: Version, Load: opt,
		KeepAlive: -1, MaxLoaded: 1, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if home, err := folioHome(); err == nil { // a pulled model's template, system prompt and parameters
		cfg.Home = home
	}
	ls := &localServer{srv: server.New(cfg), ln: newPipeListener()}
	ls.hs = &http.Server{Handler: ls.srv, ReadHeaderTimeout: 10 * time.Second}
	go ls.hs.Serve(ls.ln)
	tr := &http.Transport{DialContext: ls.ln.dial, DisableCompression: true}
	return api.NewClient(&url.URL{Scheme: "http", Host: "folio.local"}, &http.Client{Transport: tr}), ls, nil
}

// Close stops serving and unloads the model.
func (l *localServer) Close() {
	l.hs.Close()
	l.srv.Close()
}

// oneModel is the local server's registry: the one model run was given,
// under the name it was given (an alias of nothing else, never hashed).
type oneModel struct{ name, path string }

func (r *oneModel) entry() (server.ModelEntry, error) {
	st, err := os.Stat(r.path)
	if err != nil {
		return server.ModelEntry{}, err
	}
	return server.ModelEntry{Name: server.NormalizeName(r.name), Path: r.path, Size: st.Size(), Modified: st.ModTime()}, nil
}

func (r *oneModel) List() ([]server.ModelEntry, error) {
	e, err := r.entry()
	if err != nil {
		return nil, err
	}
	return []server.ModelEntry{e}, nil
}

func (r *oneModel) Resolve(_ context.Context, name string) (server.ModelEntry, error) {
	if server.NormalizeName(name) != server.NormalizeName(r.name) {
		return server.ModelEntry{}, fmt.Errorf("%w: %q (this session runs %s)", server.ErrModelNotFound, name, r.name)
	}
	return r.entry()
}

func (r *oneModel) Copy(src server.ModelEntry, dst string) error {
	return fmt.Errorf("copy: folio run's own server holds one model: run folio serve and use folio cp")
}

func (r *oneModel) Delete(name string) error {
	return fmt.Errorf("delete: folio run's own server holds one model: run folio serve and use folio rm")
}

// pipeListener is a net.Listener whose connections are in-memory pipes
// made by dial.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

// dial is the client side: http.Transport's DialContext.
func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, srv := net.Pipe()
	select {
	case l.conns <- srv:
		return client, nil
	case <-l.done:
	case <-ctx.Done():
	}
	client.Close()
	srv.Close()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return nil, net.ErrClosed
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "folio.local" }
