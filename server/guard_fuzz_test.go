package server_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
)

// FuzzGuard sends fuzzed Origin and Host headers over a loopback
// connection and checks the guard's answers against an oracle built on
// net/url: a cross-origin http(s) page passes only from localhost,
// 127.0.0.1 or 0.0.0.0 (any port), and a Host passes only as an IP
// literal or a name of this machine; every refusal is a JSON 403.
func FuzzGuard(f *testing.F) {
	for _, c := range [][2]string{
		{"", "localhost:11434"}, {"http://localhost:3000", "127.0.0.1:11434"}, {"https://evil.example", "localhost"},
		{"http://localhost:80@evil.example", "localhost"}, {"http://127.0.0.1:8080", "evil.example"},
		{"app://x", "[::1]:11434"}, {"http://evil.example:11434", "evil.example:11434"}, {"null", ""},
	} {
		f.Add(c[0], c[1])
	}
	srv, _, _, _ := guardServer(f, nil, 0)
	loopback := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 11434}
	hostname, _ := os.Hostname()
	f.Fuzz(func(t *testing.T, origin, host string) {
		ctx := context.WithValue(context.Background(), http.LocalAddrContextKey, net.Addr(loopback))
		req := httptest.NewRequestWithContext(ctx, "GET", "http://localhost/api/version", nil)
		req.Host = host
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusForbidden:
			if !json.Valid(rec.Body.Bytes()) {
				t.Fatalf("403 body %q", rec.Body)
			}
			return
		case http.StatusOK:
		default:
			t.Fatalf("origin %q host %q: status %d", origin, host, rec.Code)
		}
		if !hostOracle(host, hostname) {
			t.Fatalf("Host %q passed", host)
		}
		same := strings.EqualFold(origin, "http://"+host) || strings.EqualFold(origin, "https://"+host)
		if origin == "" || same {
			return
		}
		u, err := url.Parse(origin)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			return // the app schemes and anything a browser never sends
		}
		h := strings.ToLower(u.Hostname()) // host names are case-insensitive
		if u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" ||
			(h != "localhost" && h != "127.0.0.1" && h != "0.0.0.0") {
			t.Fatalf("origin %q (host %q) passed", origin, h)
		}
	})
}

// hostOracle: what net/url reads as the host is an IP literal, localhost
// or a subdomain, a .local or .internal name, or this machine's name. A
// Host net/url cannot read is not judged.
func hostOracle(hostport, hostname string) bool {
	u, err := url.Parse("http://" + hostport)
	if err != nil || u.Host != hostport {
		return true
	}
	h := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if net.ParseIP(h) != nil {
		return true
	}
	for _, suffix := range []string{".localhost", ".local", ".internal"} {
		if strings.HasSuffix(h, suffix) {
			return true
		}
	}
	return h == "" || h == "localhost" || strings.EqualFold(h, hostname)
}
