package installer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
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

// diskError is a failure to write the partial file: never retried.
type diskError struct{ err error }

func (e diskError) Error() string { return e.err.Error() }
func (e diskError) Unwrap() error { return e.err }

// stallCause names the stall timeout when it is what ended a request.
func stallCause(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), errStalled) {
		return errStalled
	}
	return err
}
