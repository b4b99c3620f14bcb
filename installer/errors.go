package installer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"syscall"
)

// ErrRegistry is wrapped when a registry or a download server fails: it
// answers another status than the one asked for, sends a manifest or a
// size that cannot be right, or lets a download make no progress. A model
// the registry does not have is ErrNotFound instead.
var ErrRegistry = errors.New("installer: the registry failed")

// statusError is an HTTP answer other than the one asked for. It keeps the
// status line only: the body is the server's to word, and is not passed on.
type statusError struct {
	Method string
	URL    string
	Code   int
}

func (e *statusError) Error() string {
	return fmt.Sprintf("%s %s: %d %s", e.Method, e.URL, e.Code, http.StatusText(e.Code))
}

// Is makes every unexpected answer an ErrRegistry.
func (e *statusError) Is(target error) bool { return target == ErrRegistry }

// retryable: server trouble and rate limits are retried, other answers
// (not found, unauthorized) are final.
func (e *statusError) retryable() bool {
	return e.Code >= 500 || e.Code == http.StatusTooManyRequests || e.Code == http.StatusRequestTimeout
}

func newStatusError(resp *http.Response) *statusError {
	return &statusError{Method: resp.Request.Method, URL: resp.Request.URL.Redacted(), Code: resp.StatusCode}
}

// notFoundError is an ErrNotFound in the words Ollama uses for it, which
// its clients show as they are ("pull model manifest: file does not exist").
type notFoundError struct{ msg string }

func (e *notFoundError) Error() string        { return e.msg }
func (e *notFoundError) Is(target error) bool { return target == ErrNotFound }

// ErrDiskFull is wrapped when a pull runs out of disk space, or an upload
// or import would leave less than Options.DiskReserve free.
var ErrDiskFull = errors.New("installer: the disk is full")

// diskError is a failure to write the partial file: never retried. A full
// disk says so, with the room the blob needs and what to do.
type diskError struct {
	err  error
	need int64 // bytes of the blob being written; -1 when unknown
}

func (e diskError) Error() string {
	if !errors.Is(e.err, syscall.ENOSPC) {
		return e.err.Error()
	}
	need := ""
	if e.need > 0 {
		need = fmt.Sprintf(" (the blob being written is %d bytes)", e.need)
	}
	return fmt.Sprintf("%v: %v%s: free disk space (folio rm removes models you no longer use) or set FOLIO_HOME to a disk with room, then pull again: it resumes where it stopped",
		ErrDiskFull, e.err, need)
}

func (e diskError) Unwrap() error { return e.err }

// Is makes a full disk match ErrDiskFull.
func (e diskError) Is(target error) bool {
	return target == ErrDiskFull && errors.Is(e.err, syscall.ENOSPC)
}

// stallCause names the stall timeout when it is what ended a request.
func stallCause(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), errStalled) {
		return errStalled
	}
	return err
}
