// Package web is folio's chat page: HTML, CSS and JavaScript written for
// folio (no third-party code, no build step), embedded in the binary.
// server answers GET / with the page when a browser asks for HTML
// (WantsPage) and serves its files under /ui/ (Assets). The page talks
// only to the server's own API: /api/tags, /api/show, /api/pull and
// /api/folio/conversations.
//
// The page renders model replies with its own Markdown renderer
// (static/markdown.js), which builds DOM nodes and never parses HTML from
// a reply; the Content-Security-Policy sent with the page (CSP) allows
// scripts, styles and fetches from the server alone, so that even a
// renderer bug could not run a reply's script.
package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed static
var static embed.FS

// CSP is the Content-Security-Policy of the page and its files: the page's
// own scripts, styles and images, fetches to the server that served it,
// no inline script, no frames, no forms posted anywhere, no <base>.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// file is one embedded file, with what its responses carry.
type file struct {
	data  []byte
	ctype string
	etag  string // quoted SHA-256 prefix of data
}

// files maps a path under static/ ("app.js") to its file; built once.
var files = func() map[string]file {
	m := map[string]file{}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		ctype := mime.TypeByExtension(path.Ext(p))
		if path.Ext(p) == ".js" { // some systems' mime tables say text/plain
			ctype = "text/javascript; charset=utf-8"
		}
		m[strings.TrimPrefix(p, "static/")] = file{data: data, ctype: ctype, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	if err != nil {
		panic("web: reading the embedded files: " + err.Error()) // a broken build, not a runtime state
	}
	return m
}()

// WantsPage reports whether a request for / asks for HTML, as a browser's
// navigation does (Accept: text/html,...). API clients send */*,
// application/json or nothing, and keep the server's plain-text answer.
func WantsPage(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		media, params, _ := strings.Cut(part, ";")
		if !strings.EqualFold(strings.TrimSpace(media), "text/html") {
			continue
		}
		for _, p := range strings.Split(params, ";") {
			k, v, _ := strings.Cut(p, "=")
			if strings.TrimSpace(k) == "q" && strings.Trim(strings.TrimSpace(v), "0.") == "" {
				return false // q=0: HTML refused
			}
		}
		return true
	}
	return false
}

// ServePage writes the page (index.html); HEAD gets its headers alone.
func ServePage(w http.ResponseWriter, r *http.Request) { serve(w, r, "index.html") }

// Assets serves the page's files under /ui/: /ui/app.js is static/app.js.
func Assets() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		serve(w, r, strings.TrimPrefix(r.URL.Path, "/ui/"))
	})
}

func serve(w http.ResponseWriter, r *http.Request, name string) {
	f, ok := files[name]
	if !ok {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		json.NewEncoder(w).Encode(map[string]string{"error": "no such file of the web page: " + r.URL.Path})
		return
	}
	h := w.Header()
	h.Set("Content-Type", f.ctype)
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache") // revalidate by ETag: a new binary serves new files at once
	h.Set("ETag", f.etag)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(f.data))
}
