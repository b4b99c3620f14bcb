package server

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"folio/runner"
)

// TestAnthropicErrorTypes: errors map to Anthropic's statuses and types in
// one place (anthErrorOf, over statusOf): a full queue is 529
// overloaded_error, which the SDK retries and raises as OverloadedError.
func TestAnthropicErrorTypes(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
		typ    string
	}{
		{fmt.Errorf("%w (3 queued): retry later or raise FOLIO_MAX_QUEUE", runner.ErrBusy), 529, "overloaded_error"},
		{fmt.Errorf("%w: claude-opus", ErrModelNotFound), 404, "not_found_error"},
		{fmt.Errorf("%w: no", errNotFoundPath), 404, "not_found_error"},
		{&http.MaxBytesError{Limit: 10}, 413, "request_too_large"},
		{badParam("max_tokens", "max_tokens is required"), 400, "invalid_request_error"},
		{fmt.Errorf("%w: the prompt is too long", runner.ErrRequest), 400, "invalid_request_error"},
		{fmt.Errorf("%w: origin", errForbidden), 403, "permission_error"},
		{fmt.Errorf("%w: loading", runner.ErrNoMemory), 507, "api_error"},
		{errors.New("broken"), 500, "api_error"},
	} {
		status, e := anthErrorOf(tc.err)
		if status != tc.status || e.Type != tc.typ || e.Message != tc.err.Error() {
			t.Errorf("%v: %d %+v; want %d %s", tc.err, status, e, tc.status, tc.typ)
		}
	}
}
