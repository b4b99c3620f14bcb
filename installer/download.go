package installer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A download writes a blob into <blobs>/<key>-partial in parallel byte
// ranges and records, in <key>-partial.json, how many bytes of each range
// are on disk. A pull that is killed and started again reads that record
// and asks only for the rest. The record never claims more than was
// written: it is a snapshot taken before the file is synced, written
// after.

var (
	// ErrDigest is wrapped when a blob's bytes do not hash to its digest.
	ErrDigest = errors.New("installer: sha256 digest mismatch")

	errStalled  = errors.New("no data received within the stall timeout")
	errNoRanges = errors.New("server ignores byte ranges")
)

// fetch is one blob to download.
type fetch struct {
	url    string
	header http.Header // sent with every request (e.g. Authorization)
	digest string      // "sha256:<hex>"; "" when unknown (computed, URL pulls)
	size   int64       // bytes; -1 when unknown
	ranges bool        // the server answers byte ranges
	key    string      // names the partial file: the digest's hex or "url-<hash>"
}

// what names f in messages: its digest, else its URL without a password.
func (f fetch) what() string {
	if f.digest != "" {
		return f.digest
	}
	if u, err := url.Parse(f.url); err == nil {
		return u.Redacted()
	}
	return f.url
}

// part is one byte range of a download.
type part struct {
	Off  int64 `json:"offset"`
	Len  int64 `json:"length"` // -1: to the end of a blob of unknown size
	Done int64 `json:"done"`   // bytes from Off that are written
}

// partialState is the JSON record beside a partial file.
type partialState struct {
	Digest string `json:"digest,omitempty"`
	URL    string `json:"url,omitempty"`
	Size   int64  `json:"size"`
	Parts  []part `json:"parts"`
}

// download is one running download, owned by one flight.
type download struct {
	o       *Options
	f       fetch
	fl      *flight
	file    *os.File
	partial string // <blobs>/<key>-partial

	mu    sync.Mutex
	st    partialState // guarded by mu
	fresh bool         // st starts from nothing: the file is emptied first

	w    io.WriterAt   // writes the partial file: the file, or a test's fault
	more chan struct{} // poked (without blocking) after each write, for hs
	hs   *hasher       // hashes a ranged download as it arrives; nil otherwise
}

// maxParts bounds the ranges of one blob (and so the resume record):
// beyond 1024 × MinPartSize the ranges grow instead.
const maxParts = 1024

// planParts splits size bytes into ranges of about o.MinPartSize (at
// least that, at most maxParts of them). o.Parts of them are fetched at
// once, in order, so the written prefix of the file, which the hasher
// reads, keeps growing.
func (o *Options) planParts(size int64) []part {
	n := int64(1)
	if size > 0 {
		n = max(1, min(maxParts, size/o.MinPartSize))
	}
	ps := make([]part, n)
	for i := range n {
		ps[i] = part{Off: size * i / n, Len: size*(i+1)/n - size*i/n}
	}
	if size < 0 {
		ps[0].Len = -1
	}
	return ps
}

// load reads the record beside the partial file and keeps it when it
// describes this blob; otherwise the download starts over.
func (d *download) load() {
	fresh := partialState{Digest: d.f.digest, URL: d.f.url, Size: d.f.size, Parts: d.o.planParts(d.f.size)}
	if !d.f.ranges {
		fresh.Parts = d.o.planParts(-1)
		fresh.Parts[0].Len = d.f.size
	}
	d.st, d.fresh = fresh, true
	if d.f.size < 0 || !d.f.ranges {
		return
	}
	data, err := os.ReadFile(d.partial + ".json")
	if err != nil {
		return
	}
	var old partialState
	if json.Unmarshal(data, &old) != nil || old.Digest != d.f.digest || old.Size != d.f.size ||
		(d.f.digest == "" && old.URL != d.f.url) || !tiles(old.Parts, old.Size) {
		return
	}
	st, err := d.file.Stat()
	if err != nil || st.Size() > d.f.size {
		return
	}
	for _, p := range old.Parts { // the file holds every byte the record counts
		if p.Done > 0 && p.Off+p.Done > st.Size() {
			return
		}
	}
	d.st, d.fresh = old, false
}

// tiles reports whether ps cover [0, size) in order, each Done in range.
func tiles(ps []part, size int64) bool {
	var at int64
	for _, p := range ps {
		if p.Off != at || p.Len <= 0 || p.Done < 0 || p.Done > p.Len {
			return false
		}
		at += p.Len
	}
	return len(ps) > 0 && at == size
}

// save writes the record of what is on disk: a snapshot, then a sync of
// the file, then the snapshot, so the record never runs ahead of the data.
func (d *download) save() error {
	if d.f.size < 0 || !d.f.ranges {
		return nil
	}
	d.mu.Lock()
	snap := d.st
	snap.Parts = append([]part(nil), d.st.Parts...)
	d.mu.Unlock()
	if err := d.file.Sync(); err != nil {
		return err
	}
	data, err := json.Marshal(snap)
	if err != nil {
		return err
	}
	tmp := d.partial + ".json.tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, d.partial+".json")
}

func (d *download) done() (n int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, p := range d.st.Parts {
		n += p.Done
	}
	return n
}

// run fetches every unfinished range, in parallel, saving the record every
// o.SaveEvery, and once more at the end whatever happened. The partial file
// is never extended beyond what is written: a range writes at its offset,
// so the file is as long as the furthest byte that arrived.
func (d *download) run(ctx context.Context) error {
	if d.fresh {
		if err := d.file.Truncate(0); err != nil {
			return d.diskError(err)
		}
	}
	d.fl.total.Store(d.f.size)
	d.fl.completed.Store(d.done())
	if d.f.ranges {
		d.hs = d.startHasher()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// o.Parts workers take the ranges in order.
	jobs := make(chan int, len(d.st.Parts))
	for i := range d.st.Parts {
		jobs <- i
	}
	close(jobs)
	workers := min(d.o.Parts, len(d.st.Parts))
	errs := make(chan error, workers)
	for range workers {
		go func() {
			for i := range jobs {
				if err := d.runPart(ctx, i); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	tick := time.NewTicker(d.o.SaveEvery)
	defer tick.Stop()
	var first error
	for left := workers; left > 0; {
		select {
		case err := <-errs:
			left--
			if err != nil && first == nil {
				first = err
				cancel() // the other ranges stop; their bytes are kept
			}
		case <-tick.C:
			if err := d.save(); err != nil && first == nil {
				first = d.diskError(err)
				cancel()
			}
		}
	}
	if err := d.save(); err != nil && first == nil {
		first = d.diskError(err)
	}
	if first != nil && d.hs != nil {
		d.hs.abandon()
		d.hs = nil
	}
	return first
}

// verify returns the digest and size of the finished file.
func (d *download) verify() (string, int64, error) {
	if d.hs != nil {
		return d.hs.finish()
	}
	return hashFile(d.file)
}

// runPart fetches range i until it is complete, retrying failures with
// exponential backoff; an attempt that made progress resets the backoff.
func (d *download) runPart(ctx context.Context, i int) error {
	buf := make([]byte, 1<<20)
	failures := 0
	for {
		d.mu.Lock()
		p := d.st.Parts[i]
		if p.Len >= 0 && p.Done >= p.Len {
			d.mu.Unlock()
			return nil
		}
		if !d.f.ranges && p.Done > 0 { // one stream: a retry starts over
			d.fl.completed.Add(-p.Done)
			d.st.Parts[i].Done, p.Done = 0, 0
			if err := d.file.Truncate(0); err != nil {
				d.mu.Unlock()
				return d.diskError(err)
			}
		}
		d.mu.Unlock()
		n, err := d.fetchPart(ctx, i, p, buf)
		if err == nil && p.Len < 0 {
			return nil // a blob of unknown size ends at EOF
		}
		if err == nil {
			continue
		}
		var se *statusError
		var de diskError
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, errNoRanges), errors.As(err, &de), errors.As(err, &se) && !se.retryable():
			return err
		}
		if n > 0 && d.f.ranges { // progress that a retry keeps
			failures = 0
		}
		failures++
		if failures > d.o.Retries {
			return fmt.Errorf("%w: %d tries without progress, giving up (run the pull again to resume): %w", ErrRegistry, failures, err)
		}
		wait := min(d.o.RetryBase<<min(failures-1, 16), 30*time.Second)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

// fetchPart asks for the rest of range i and writes what arrives. It
// returns the bytes written, and an error if the range is not complete.
// A read that waits longer than o.StallTimeout ends the attempt.
func (d *download) fetchPart(ctx context.Context, i int, p part, buf []byte) (int64, error) {
	start := p.Off + p.Done
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stall := time.AfterFunc(d.o.StallTimeout, func() { cancel(errStalled) })
	defer stall.Stop()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, d.f.url, nil)
	if err != nil {
		return 0, err
	}
	for k, v := range d.f.header {
		req.Header[k] = v
	}
	if d.f.ranges {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", start, p.Off+p.Len-1))
	}
	resp, err := d.o.HTTP.Do(req)
	if err != nil {
		return 0, stallCause(rctx, err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusPartialContent:
		if !d.f.ranges || !strings.HasPrefix(resp.Header.Get("Content-Range"), "bytes "+strconv.FormatInt(start, 10)+"-") {
			return 0, fmt.Errorf("%w: asked for bytes from %d, got Content-Range %q", errNoRanges, start, resp.Header.Get("Content-Range"))
		}
	case http.StatusOK:
		if start != 0 || len(d.st.Parts) != 1 {
			return 0, errNoRanges
		}
	default:
		return 0, newStatusError(resp)
	}
	left := int64(-1)
	if p.Len >= 0 {
		left = p.Len - p.Done
	}
	var written int64
	for left != 0 {
		want := len(buf)
		if left > 0 && int64(want) > left {
			want = int(left)
		}
		// Each read is written at once, so that progress and the resume
		// record see it even when the next read waits.
		m, rerr := resp.Body.Read(buf[:want])
		if m > 0 {
			stall.Reset(d.o.StallTimeout)
			if _, err := d.w.WriteAt(buf[:m], start+written); err != nil {
				return written, d.diskError(err)
			}
			written += int64(m)
			if left > 0 {
				left -= int64(m)
			}
			d.mu.Lock()
			d.st.Parts[i].Done += int64(m)
			d.mu.Unlock()
			d.fl.completed.Add(int64(m))
			select {
			case d.more <- struct{}{}:
			default:
			}
		}
		if rerr == io.EOF && p.Len < 0 {
			return written, nil
		}
		if rerr != nil && left != 0 {
			if rerr == io.EOF {
				rerr = io.ErrUnexpectedEOF
			}
			return written, stallCause(rctx, rerr)
		}
	}
	return written, nil
}

// downloadBlob fetches f into the blob store and returns its digest: the
// known one after verifying it, or the one computed for a URL pull.
// Nothing is renamed into blobs/sha256-<hex> before the hash matches.
func (o *Options) downloadBlob(ctx context.Context, f fetch, fl *flight) (string, error) {
	dir := filepath.Join(o.Home, "blobs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	if f.digest != "" {
		if final, _ := BlobPath(o.Home, f.digest); haveBlob(final, f.size) {
			fl.total.Store(f.size)
			fl.completed.Store(f.size)
			return f.digest, nil
		}
	}
	d := &download{o: o, f: f, fl: fl, partial: filepath.Join(dir, f.key+"-partial"), more: make(chan struct{}, 1)}
	file, err := os.OpenFile(d.partial, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return "", err
	}
	d.file, d.w = file, partialWriter(file)
	defer file.Close()
	if err := waitLock(ctx, file); err != nil {
		return "", err
	}
	if f.digest != "" { // another process may have finished it meanwhile
		if final, _ := BlobPath(o.Home, f.digest); haveBlob(final, f.size) {
			os.Remove(d.partial)
			return f.digest, nil
		}
	}
	d.load()
	if err := checkRoom(dir, f, d.done()); err != nil {
		if d.fresh { // nothing of it to resume
			os.Remove(d.partial)
			os.Remove(d.partial + ".json")
		}
		return "", err
	}
	err = d.run(ctx)
	if errors.Is(err, errNoRanges) && ctx.Err() == nil {
		d.f.ranges = false // start over as one stream
		d.load()
		err = d.run(ctx)
	}
	if err != nil {
		return "", err
	}
	got, size, err := d.verify()
	if err != nil {
		return "", err
	}
	if f.digest != "" && got != f.digest || f.size >= 0 && size != f.size {
		os.Remove(d.partial)
		os.Remove(d.partial + ".json")
		return "", fmt.Errorf("%w: %s: got %s (%d bytes), want %s (%d bytes); the download is discarded",
			ErrDigest, f.url, got, size, f.digest, f.size)
	}
	final, _ := BlobPath(o.Home, got)
	if err := file.Chmod(0o600); err != nil {
		return "", err
	}
	if err := os.Rename(d.partial, final); err != nil {
		return "", err
	}
	os.Remove(d.partial + ".json")
	syncDir(dir)
	return got, nil
}

// partialWriter gives the writer of a download's partial file; tests
// replace it to inject faults (a disk that fills up).
var partialWriter = func(f *os.File) io.WriterAt { return f }

// diskError wraps a failure to write the partial file, with the size of
// the blob that needed the room.
func (d *download) diskError(err error) error { return diskError{err: err, need: d.f.size} }

// haveBlob reports whether a finished blob of that size (any, if size < 0)
// is on disk.
func haveBlob(path string, size int64) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && (size < 0 || st.Size() == size)
}

// waitLock takes the partial file's lock, waiting while another process
// downloads the same blob.
func waitLock(ctx context.Context, f *os.File) error {
	for {
		ok, err := tryLock(f, true)
		if ok || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
