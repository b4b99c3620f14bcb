package installer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
)

// statusError is an HTTP answer other than the one asked for.
type statusError struct {
	URL  string
	Code int
	Body string
}

func (e *statusError) Error() string {
	msg := fmt.Sprintf("GET %s: %d %s", e.URL, e.Code, http.StatusText(e.Code))
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// retryable: server trouble and rate limits are retried, other answers
// (not found, unauthorized) are final.
func (e *statusError) retryable() bool {
	return e.Code >= 500 || e.Code == http.StatusTooManyRequests || e.Code == http.StatusRequestTimeout
}

func newStatusError(resp *http.Response) *statusError {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	return &statusError{URL: resp.Request.URL.Redacted(), Code: resp.StatusCode, Body: strings.TrimSpace(string(b))}
}

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
