package cmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"folio/internal/envconfig"
	"folio/runner"
	"folio/server"
	"folio/store"
)

// hostAddr is FOLIO_HOST as host:port: where serve listens and where the
// other commands look for a server. It takes Ollama's forms ("host",
// "host:port", ":port", "http://host:port", IPv6 with or without
// brackets); the host defaults to 127.0.0.1 (this machine only: other
// machines reach folio when FOLIO_HOST names their interface, 0.0.0.0 for
// all) and the port to 11434, Ollama's, so that apps that expect Ollama
// find folio. A FOLIO_HOST that parses as none of these is returned as it
// is, for the error of whatever uses it to show (serve checks it first).
func hostAddr() string {
	addr, err := parseHost(envconfig.Get("FOLIO_HOST"))
	if err != nil {
		return strings.TrimSpace(envconfig.Get("FOLIO_HOST"))
	}
	return addr
}

// parseHost is hostAddr's parser.
func parseHost(s string) (string, error) {
	const defaultHost, defaultPort = "127.0.0.1", "11434"
	h := strings.TrimSpace(s)
	if scheme, rest, ok := strings.Cut(h, "://"); ok {
		if scheme != "http" && scheme != "https" {
			return "", fmt.Errorf("FOLIO_HOST=%q: scheme %q: use host:port or http://host:port", s, scheme)
		}
		h = rest
	}
	h, _, _ = strings.Cut(h, "/") // a path after the address names nothing to listen on
	host, port, err := net.SplitHostPort(h)
	if err != nil { // no port: "host", "::1", "[::1]" or ""
		host, port = strings.Trim(h, "[]"), defaultPort
	}
	if host == "" {
		host = defaultHost
	}
	if port == "" {
		port = defaultPort
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return "", fmt.Errorf("FOLIO_HOST=%q: port %q: use a number from 1 to 65535", s, port)
	}
	if strings.ContainsAny(host, " /@?#[]") || (strings.Contains(host, ":") && net.ParseIP(host) == nil) {
		return "", fmt.Errorf("FOLIO_HOST=%q: host %q: use a host name or an IP address", s, host)
	}
	return net.JoinHostPort(host, port), nil
}

// envInt reads an integer setting, naming it in the error.
func envInt(name string, def int64) (int64, error) {
	v := strings.TrimSpace(envconfig.Get(name))
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s=%q: use a non-negative whole number", name, v)
	}
	return n, nil
}

// serverConfig is the server's configuration from the environment.
func serverConfig() (server.Config, error) {
	cfg := server.Config{Registry: server.NewLibraryRegistry(modelsPath()), Version: Version}
	var err error
	get := func(name string, def int64) int64 {
		if err != nil {
			return 0
		}
		var n int64
		n, err = envInt(name, def)
		return n
	}
	cfg.Load = withDevice(cfg.Load)
	cfg.MaxLoaded = int(get("FOLIO_MAX_LOADED_MODELS", 3))
	cfg.MaxQueue = int(get("FOLIO_MAX_QUEUE", 512))
	cfg.Load.KVMemory = get("FOLIO_KV_MEMORY", 0)
	cfg.Load.NumCtx = int(get("FOLIO_CONTEXT_LENGTH", 0))
	cfg.MaxBodyBytes = get("FOLIO_MAX_BODY", 32<<20)
	if err != nil {
		return cfg, err
	}
	if t := envconfig.Get("FOLIO_KV_CACHE_TYPE"); t != "" {
		if _, perr := runner.ParseKVType(t); perr != nil {
			return cfg, fmt.Errorf("FOLIO_KV_CACHE_TYPE=%q: use f16 (the default), q8_0 (half the memory) or f32", t)
		}
		cfg.Load.KVType, cfg.KVTypeFallback = t, true
	}
	if o := envconfig.Get("FOLIO_ORIGINS"); o != "" {
		cfg.Origins = strings.Split(o, ",")
	}
	if ka := envconfig.Get("FOLIO_KEEP_ALIVE"); ka != "" {
		d, perr := time.ParseDuration(ka)
		if perr != nil {
			return cfg, fmt.Errorf("FOLIO_KEEP_ALIVE=%q: use a duration such as 5m or 1h", ka)
		}
		cfg.KeepAlive = d
	}
	return cfg, nil
}

// folioHome is FOLIO_HOME, default ~/.folio.
func folioHome() (string, error) {
	if h := envconfig.Get("FOLIO_HOME"); h != "" {
		return h, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no home directory (%v): set FOLIO_HOME", err)
	}
	return filepath.Join(home, ".folio"), nil
}

// openRegistry opens the model registry (folio.db) in FOLIO_HOME.
func openRegistry(log *slog.Logger) (*store.Registry, error) {
	home, err := folioHome()
	if err != nil {
		return nil, err
	}
	return store.OpenRegistry(home, store.RegistryOptions{Log: log})
}

// openKVStore opens the persisted prefix K/V cache (kvcache.db) in
// FOLIO_HOME with the budget FOLIO_KV_STORE_MAX; a negative budget turns
// it off (nil).
func openKVStore(log *slog.Logger) (*store.KVStore, error) {
	home, err := folioHome()
	if err != nil {
		return nil, err
	}
	kvMax, err := envInt("FOLIO_KV_STORE_MAX", 0)
	if err != nil || kvMax < 0 {
		return nil, err
	}
	var remote *store.RemoteKV
	if url := strings.TrimSpace(envconfig.Get("FOLIO_KV_REMOTE")); url != "" {
		if kvMax < 0 {
			return nil, fmt.Errorf("FOLIO_KV_REMOTE is set and FOLIO_KV_STORE_MAX is negative (no persisted store): the shared tier sits behind the persisted store; unset one of them")
		}
		remote, err = store.OpenRemote(store.RemoteOptions{URL: url, Key: []byte(envconfig.Get("FOLIO_KV_REMOTE_KEY")), Log: log})
		if err != nil {
			return nil, err
		}
		log.Info("shared prefix K/V tier", "redis", store.RedactURL(url))
	}
	return store.OpenKV(home, store.KVOptions{MaxBytes: kvMax, Log: log, Remote: remote})
}

// logKVStore says where the persisted prefix K/V cache is, its budget
// and what its files take now; kv is nil when it is off.
func logKVStore(log *slog.Logger, kv *store.KVStore) {
	var file string
	var budget int64
	if kv != nil {
		file, budget = kv.KVBudget()
	}
	if file == "" {
		log.Info("persisted prefix K/V cache is off for this process")
		return
	}
	var onDisk int64
	for _, f := range []string{file, file + "-wal", file + "-shm"} {
		if fi, err := os.Stat(f); err == nil {
			onDisk += fi.Size()
		}
	}
	log.Info("persisted prefix K/V cache", "file", file, "budget", humanBytes(budget), "budget_bytes", budget,
		"on_disk", humanBytes(onDisk), "set_budget_with", "FOLIO_KV_STORE_MAX")
}

func newServeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the Ollama and OpenAI APIs",
		Long: "serve answers the Ollama API (/api/*) at FOLIO_HOST (default 127.0.0.1:11434).\n" +
			"Models are the GGUF files in the folders of FOLIO_MODELS_PATH.\n" +
			"The default address serves this machine only: set FOLIO_HOST=0.0.0.0 to serve the network.\n\n" +
			"Settings (environment variables, with their defaults):\n" + envconfig.Usage(),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := serverConfig()
			if err != nil {
				return err
			}
			level, err := logLevel()
			if err != nil {
				return err
			}
			cfg.Log = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
			settings := envconfig.AsMap()
			for _, secret := range []string{"HF_TOKEN", "FOLIO_KV_REMOTE_KEY"} {
				if settings[secret] != "" {
					settings[secret] = "(set)" // a secret: never in a log
				}
			}
			settings["FOLIO_KV_REMOTE"] = store.RedactURL(settings["FOLIO_KV_REMOTE"])
			cfg.Log.Debug("settings", "env", settings)
			reg, err := openRegistry(cfg.Log)
			if err != nil {
				return err
			}
			defer reg.Close()
			kv, err := openKVStore(cfg.Log)
			if err != nil {
				return err
			}
			if kv != nil {
				defer kv.Close()
				cfg.Store = kv
			}
			logKVStore(cfg.Log, kv)
			if home, err := folioHome(); err == nil { // installer hook: /api/pull, /api/create and /api/blobs install here
				opt := installOptions(home, reg)
				cfg.Install = &opt
			}
			if lib, ok := cfg.Registry.(*server.LibraryRegistry); ok {
				lib.Store = reg
			}
			cfg.Conversations = reg
			addr, err := parseHost(envconfig.Get("FOLIO_HOST"))
			if err != nil {
				return err
			}
			maxConns, err := envInt("FOLIO_MAX_CONNECTIONS", int64(server.DefaultMaxConnections()))
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("serve: %w (is another server on %s? set FOLIO_HOST)", err, addr)
			}
			srv := server.New(cfg)
			defer srv.Close()
			// Headers must arrive in 10 s and an idle keep-alive connection is closed after 2 minutes;
			// a body must keep arriving (the server's BodyTimeout and BodyMinBytes), however long it
			// is, and an answer may stream for as long as it takes: there is no whole-request deadline.
			hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
			ln = server.LimitListener(ln, int(maxConns), cfg.Log)
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			go func() {
				<-ctx.Done()
				sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				hs.Shutdown(sctx)
			}()
			if err := serveMetrics(ctx, srv, cfg.Log); err != nil {
				return err
			}
			cfg.Log.Info("folio serving", "addr", ln.Addr().String(), "version", Version, "max_connections", maxConns)
			if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	return cmd
}

// serveMetrics serves GET /metrics at FOLIO_METRICS_ADDR, when it is set,
// until ctx ends.
func serveMetrics(ctx context.Context, srv *server.Server, log *slog.Logger) error {
	addr := strings.TrimSpace(envconfig.Get("FOLIO_METRICS_ADDR"))
	if addr == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return fmt.Errorf("FOLIO_METRICS_ADDR=%q: use host:port, such as 127.0.0.1:9464 or :9464 (every interface)", addr)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return fmt.Errorf("serve: metrics: %w (set FOLIO_METRICS_ADDR to a free address)", err)
	}
	hs := &http.Server{Handler: srv.MetricsHandler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	go func() {
		<-ctx.Done()
		hs.Close()
	}()
	go hs.Serve(ln)
	log.Info("metrics serving", "addr", ln.Addr().String(), "path", "/metrics")
	return nil
}

// logLevel is serve's log level: debug with FOLIO_DEBUG=1, else info.
func logLevel() (slog.Level, error) {
	switch v := envconfig.Get("FOLIO_DEBUG"); strings.ToLower(v) {
	case "", "0", "false":
		return slog.LevelInfo, nil
	case "1", "true":
		return slog.LevelDebug, nil
	default:
		return 0, fmt.Errorf("FOLIO_DEBUG=%q: set it to 1 to log at debug level, or 0 (or leave it unset) for info", v)
	}
}
