package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestNamedRequestsNeedModel: show, pull, push and delete decode their
// model (or name) the same way, and a request without one is a 400 that
// says so (delete answered 404 for a model named "").
func TestNamedRequestsNeedModel(t *testing.T) {
	_, base := newTestServer(t)
	for _, c := range []struct{ method, path string }{
		{http.MethodPost, "/api/show"},
		{http.MethodPost, "/api/pull"},
		{http.MethodPost, "/api/push"},
		{http.MethodDelete, "/api/delete"},
	} {
		t.Run(c.path, func(t *testing.T) {
			req, _ := http.NewRequest(c.method, base+c.path, strings.NewReader(`{"stream": false}`))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 400 || !strings.Contains(string(data), "model is required") {
				t.Errorf("%d %s; want 400 saying the model is required", resp.StatusCode, data)
			}
		})
	}
}
