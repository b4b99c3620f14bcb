package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// The guard runs before every route (ServeHTTP). A local server is reached
// by every web page the user opens and, when bound beyond loopback, by the
// network, so it checks, in order:
//
//   - the Host header, when the connection arrived on a loopback address:
//     a name other than localhost, this machine's or an IP literal is a
//     page that rebound its own DNS name to 127.0.0.1 (DNS rebinding);
//   - the Origin header, as Ollama does: a browser's cross-origin request
//     passes only from localhost pages, desktop-app schemes and the
//     origins of FOLIO_ORIGINS; preflights (OPTIONS) of those are answered
//     here; requests without an Origin (curl, SDKs) pass;
//   - the body size (MaxBodyBytes) of everything but blob uploads, and the
//     pace at which every body must arrive (boundBody, conns.go).
//
// It also records where the request came from (peerOf: this process,
// this machine or the network), for the file-path rule of checkModelName
// (paths.go).

// defaultOrigins are the browser origins allowed without FOLIO_ORIGINS:
// Ollama's list (envconfig.AllowedOrigins).
var defaultOrigins = []string{
	"http://localhost", "https://localhost", "http://localhost:*", "https://localhost:*",
	"http://127.0.0.1", "https://127.0.0.1", "http://127.0.0.1:*", "https://127.0.0.1:*",
	"http://0.0.0.0", "https://0.0.0.0", "http://0.0.0.0:*", "https://0.0.0.0:*",
	"app://*", "file://*", "tauri://*", "vscode-webview://*", "vscode-file://*",
}

// corsHeaders are the request headers a preflight may ask for: Ollama's,
// with the OpenAI and Anthropic SDKs'.
const corsHeaders = "Authorization, Content-Type, User-Agent, Accept, X-Requested-With, OpenAI-Beta, " +
	"x-stainless-arch, x-stainless-async, x-stainless-custom-poll-interval, x-stainless-helper-method, " +
	"x-stainless-lang, x-stainless-os, x-stainless-package-version, x-stainless-poll-helper, " +
	"x-stainless-retry-count, x-stainless-runtime, x-stainless-runtime-version, x-stainless-timeout, " +
	"x-api-key, anthropic-version, anthropic-beta, anthropic-dangerous-direct-browser-access"

var errForbidden = errors.New("forbidden")

// origins decides which browser origins may call the API.
type origins struct {
	any      bool     // "*" was listed
	patterns []string // exact origins, or one '*' standing for any text (":*" for a port)
}

func newOrigins(extra []string) origins {
	o := origins{patterns: append([]string(nil), defaultOrigins...)}
	for _, e := range extra {
		e = strings.TrimSuffix(strings.TrimSpace(e), "/")
		switch e {
		case "":
		case "*":
			o.any = true
		default:
			o.patterns = append(o.patterns, e)
		}
	}
	return o
}

// allows reports whether a browser page of origin may call the API.
func (o origins) allows(origin string) bool {
	if o.any {
		return true
	}
	for _, p := range o.patterns {
		if originMatch(p, origin) {
			return true
		}
	}
	return false
}

// originMatch matches origin against p: exactly, or with p's one '*' as
// any text; a trailing ":*" matches a port number only, so
// "http://localhost:*" never matches "http://localhost:1.evil.example".
func originMatch(p, origin string) bool {
	prefix, suffix, wild := strings.Cut(p, "*")
	if !wild {
		return strings.EqualFold(p, origin)
	}
	if len(origin) < len(prefix)+len(suffix) || !strings.EqualFold(origin[:len(prefix)], prefix) ||
		!strings.EqualFold(origin[len(origin)-len(suffix):], suffix) {
		return false
	}
	if suffix == "" && strings.HasSuffix(prefix, ":") {
		port, err := strconv.ParseUint(origin[len(prefix):], 10, 16)
		return err == nil && port > 0
	}
	return true
}

// sameOrigin: a page served by this host calling it is not cross-origin.
func sameOrigin(r *http.Request, origin string) bool {
	return r.Host != "" && (strings.EqualFold(origin, "http://"+r.Host) || strings.EqualFold(origin, "https://"+r.Host))
}

// loopbackConn reports whether r arrived on a loopback address of this
// machine (the listener's side of the connection).
func loopbackConn(r *http.Request) bool {
	a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return false
	}
	ap, err := netip.ParseAddrPort(a.String())
	return err == nil && ap.Addr().Unmap().IsLoopback()
}

// allowedHost: the names a page on this machine reaches a loopback server
// by. IP literals cannot be rebound; localhost and *.localhost resolve to
// loopback by rule; .local and .internal are the LAN's and containers'
// names of this host, as Ollama allows.
func allowedHost(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	if len(host) > 1 && host[0] == '[' && host[len(host)-1] == ']' { // an IPv6 literal without a port
		host = host[1 : len(host)-1]
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	if host == "" || host == "localhost" {
		return true
	}
	for _, tld := range []string{".localhost", ".local", ".internal"} {
		if strings.HasSuffix(host, tld) {
			return true
		}
	}
	name, err := os.Hostname()
	return err == nil && strings.EqualFold(host, name)
}

// peer is where a request came from, kept in its context under peerKey.
type peer int

const (
	peerNetwork  peer = iota // another machine (or an address folio cannot tell)
	peerLoopback             // a program of this machine, over a loopback socket
	peerProcess              // this process: folio run's in-memory pipe
)

type peerKey struct{}

// peerOf is the peer of the request of ctx.
func peerOf(ctx context.Context) peer {
	p, _ := ctx.Value(peerKey{}).(peer)
	return p
}

func requestPeer(r *http.Request) peer {
	if r.RemoteAddr == "pipe" { // net.Pipe's address: cmd's in-process server
		return peerProcess
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return peerNetwork
	}
	if a, err := netip.ParseAddr(host); err == nil && a.Unmap().IsLoopback() {
		return peerLoopback
	}
	return peerNetwork
}

// guard applies the checks above; it answers the request itself (an
// error, or a preflight) and returns false when the route must not run.
func (s *Server) guard(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	if loopbackConn(r) && !allowedHost(r.Host) {
		writeError(w, fmt.Errorf("%w: Host %q: this server listens on a loopback address and answers only "+
			"localhost, this machine's name and IP addresses (a web page reaching it by another name is DNS rebinding); "+
			"to serve other machines set FOLIO_HOST to their interface, such as 0.0.0.0", errForbidden, r.Host))
		return r, false
	}
	if origin := r.Header.Get("Origin"); origin != "" && !sameOrigin(r, origin) {
		if !s.origins.allows(origin) {
			writeError(w, fmt.Errorf("%w: origin %q may not call this server: add it to FOLIO_ORIGINS "+
				"(a comma-separated list; localhost pages and app:// file:// tauri:// vscode-webview:// are allowed already)", errForbidden, origin))
			return r, false
		}
		h := w.Header()
		h.Add("Vary", "Origin")
		h.Set("Access-Control-Allow-Origin", origin)
		if r.Method == http.MethodOptions {
			h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS")
			h.Set("Access-Control-Allow-Headers", corsHeaders)
			h.Set("Access-Control-Max-Age", "43200")
			w.WriteHeader(http.StatusNoContent)
			return r, false
		}
	}
	s.boundBody(w, r)
	if !unlimitedBody(r) { // blob uploads: see pull.go
		r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
	}
	return r.WithContext(context.WithValue(r.Context(), peerKey{}, requestPeer(r))), true
}

// bodyErr says what a request over the body limit can do.
func bodyErr(err error) error {
	var mb *http.MaxBytesError
	if errors.As(err, &mb) {
		return fmt.Errorf("%w (over %d bytes): send a smaller request, or raise the server's FOLIO_MAX_BODY", err, mb.Limit)
	}
	return err
}
