package installer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
)

// defaultQuant is the file a hf.co name without a tag (or with :latest)
// pulls, as Ollama does.
const defaultQuant = "Q4_K_M"

// hfFile is a file of a Hugging Face repository, from either listing:
// GET /api/models/ORG/REPO/tree/main (path, size, lfs.oid) or
// GET /api/models/ORG/REPO?blobs=true (siblings: rfilename, size, lfs.sha256).
type hfFile struct {
	Path   string
	Size   int64
	SHA256 string // hex; "" for a file kept in git rather than LFS
}

// hfEndpoint is o.HFEndpoint, else Hugging Face.
func (o *Options) hfEndpoint() string {
	ep := o.HFEndpoint
	if ep == "" {
		ep = "https://huggingface.co"
	}
	return strings.TrimRight(ep, "/")
}

// hfHeader carries o.HFToken, for gated and private repositories.
func (o *Options) hfHeader() http.Header {
	h := http.Header{}
	if tok := o.HFToken; tok != "" {
		h.Set("Authorization", "Bearer "+tok)
	}
	return h
}

// hfFiles lists a repository's files: the tree listing first, the model
// info's siblings when the tree is not there.
func (o *Options) hfFiles(ctx context.Context, n Name) ([]hfFile, error) {
	ep := o.hfEndpoint()
	repo := n.Namespace + "/" + n.Model
	data, err := o.getSmall(ctx, ep+"/api/models/"+repo+"/tree/main?recursive=true", o.hfHeader(), maxManifest)
	if err == nil {
		var tree []struct {
			Type string `json:"type"`
			Path string `json:"path"`
			Size int64  `json:"size"`
			LFS  *struct {
				Oid  string `json:"oid"`
				Size int64  `json:"size"`
			} `json:"lfs"`
		}
		if err := json.Unmarshal(data, &tree); err != nil {
			return nil, fmt.Errorf("hf.co/%s: file list is not JSON: %v", repo, err)
		}
		var fs []hfFile
		for _, t := range tree {
			if t.Type != "file" {
				continue
			}
			f := hfFile{Path: t.Path, Size: t.Size}
			if t.LFS != nil {
				f.SHA256, f.Size = t.LFS.Oid, t.LFS.Size
			}
			fs = append(fs, f)
		}
		return fs, nil
	}
	var se *statusError
	if !errors.As(err, &se) || se.Code != http.StatusNotFound {
		return nil, fmt.Errorf("hf.co/%s: list files: %w", repo, err)
	}
	data, err = o.getSmall(ctx, ep+"/api/models/"+repo+"?blobs=true", o.hfHeader(), maxManifest)
	if errors.As(err, &se) && se.Code == http.StatusNotFound {
		return nil, fmt.Errorf("%w: hf.co/%s: no such repository (or it is private: set HF_TOKEN)", ErrNotFound, repo)
	}
	if err != nil {
		return nil, fmt.Errorf("hf.co/%s: list files: %w", repo, err)
	}
	var info struct {
		Siblings []struct {
			RFilename string `json:"rfilename"`
			Size      int64  `json:"size"`
			LFS       *struct {
				SHA256 string `json:"sha256"`
				Size   int64  `json:"size"`
			} `json:"lfs"`
		} `json:"siblings"`
	}
	if err := json.Unmarshal(data, &info); err != nil {
		return nil, fmt.Errorf("hf.co/%s: model info is not JSON: %v", repo, err)
	}
	var fs []hfFile
	for _, s := range info.Siblings {
		f := hfFile{Path: s.RFilename, Size: s.Size}
		if s.LFS != nil {
			f.SHA256, f.Size = s.LFS.SHA256, s.LFS.Size
		}
		fs = append(fs, f)
	}
	return fs, nil
}

// pickGGUF chooses the GGUF file of a quantization: the file whose name
// holds quant as a word (Q4_K matches x-Q4_K.gguf, not x-Q4_K_M.gguf),
// case-insensitively. "latest" is Q4_K_M, or the only GGUF of the repo.
func pickGGUF(repo string, files []hfFile, quant string) (hfFile, error) {
	var ggufs []hfFile
	for _, f := range files {
		base := strings.ToLower(path.Base(f.Path))
		if strings.HasSuffix(base, ".gguf") && !strings.Contains(base, "mmproj") {
			ggufs = append(ggufs, f)
		}
	}
	if len(ggufs) == 0 {
		return hfFile{}, fmt.Errorf("%w: hf.co/%s has no GGUF files", ErrNotFound, repo)
	}
	want := quant
	if quant == DefaultTag {
		want = defaultQuant
	}
	var hits []hfFile
	for _, f := range ggufs {
		if hasWord(strings.ToLower(path.Base(f.Path)), strings.ToLower(want)) {
			hits = append(hits, f)
		}
	}
	if len(hits) == 0 && quant == DefaultTag && len(ggufs) == 1 {
		hits = ggufs
	}
	if len(hits) == 0 {
		var names []string
		for _, f := range ggufs {
			names = append(names, path.Base(f.Path))
		}
		return hfFile{}, fmt.Errorf("%w: hf.co/%s has no GGUF file for %s; its files: %s (name one by its quantization, e.g. hf.co/%s:Q8_0)",
			ErrNotFound, repo, want, strings.Join(names, ", "), repo)
	}
	slices.SortFunc(hits, func(a, b hfFile) int { return len(a.Path) - len(b.Path) })
	f := hits[0]
	if strings.Contains(strings.ToLower(f.Path), "-of-0") {
		return hfFile{}, fmt.Errorf("hf.co/%s: %s is split into several files, which folio cannot join yet", repo, f.Path)
	}
	return f, nil
}

// hasWord reports whether w occurs in s with no letter, digit or '_' on
// either side.
func hasWord(s, w string) bool {
	word := func(c byte) bool {
		return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	for i := 0; ; {
		j := strings.Index(s[i:], w)
		if j < 0 {
			return false
		}
		j += i
		if (j == 0 || !word(s[j-1])) && (j+len(w) == len(s) || !word(s[j+len(w)])) {
			return true
		}
		i = j + 1
	}
}

// hfFetch resolves hf.co/ORG/REPO:QUANT to the download of one GGUF file.
func (o *Options) hfFetch(ctx context.Context, n Name) (fetch, error) {
	repo := n.Namespace + "/" + n.Model
	files, err := o.hfFiles(ctx, n)
	if err != nil {
		return fetch{}, err
	}
	f, err := pickGGUF(repo, files, n.Tag)
	if err != nil {
		return fetch{}, err
	}
	var segs []string
	for _, s := range strings.Split(f.Path, "/") {
		if s == "" || s == "." || s == ".." {
			return fetch{}, fmt.Errorf("%w: hf.co/%s lists a file named %q", ErrName, repo, f.Path)
		}
		segs = append(segs, url.PathEscape(s))
	}
	ft := fetch{url: o.hfEndpoint() + "/" + repo + "/resolve/main/" + strings.Join(segs, "/"),
		header: o.hfHeader(), size: f.Size, ranges: true}
	if f.SHA256 != "" {
		ft.digest = "sha256:" + strings.ToLower(f.SHA256)
		if err := CheckDigest(ft.digest); err != nil {
			return fetch{}, fmt.Errorf("hf.co/%s: LFS metadata of %s: %w", repo, f.Path, err)
		}
		ft.key = ft.digest[len("sha256:"):]
	} else {
		ft.key = urlKey(ft.url)
	}
	return ft, nil
}

// urlFetch probes a plain URL for its size and whether it answers byte
// ranges. Its digest is unknown: it is computed after the download.
func (o *Options) urlFetch(ctx context.Context, u string) (fetch, error) {
	pu, err := url.Parse(u)
	if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
		return fetch{}, fmt.Errorf("%w: %q is not an http(s) URL", ErrName, u)
	}
	ft := fetch{url: u, size: -1, key: urlKey(u)}
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, u, nil)
	if err != nil {
		return fetch{}, err
	}
	resp, err := o.HTTP.Do(req)
	if err != nil {
		return fetch{}, fmt.Errorf("HEAD %s: %w", pu.Redacted(), err)
	}
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return fetch{}, fmt.Errorf("%w: %s", ErrNotFound, pu.Redacted())
	case resp.StatusCode == http.StatusOK:
		ft.size = resp.ContentLength
		ft.ranges = ft.size > 0 && resp.Header.Get("Accept-Ranges") == "bytes"
	}
	return ft, nil
}

// urlKey names the partial file of a blob known only by its URL.
func urlKey(u string) string {
	h := sha256.Sum256([]byte(u))
	return "url-" + hex.EncodeToString(h[:16])
}
