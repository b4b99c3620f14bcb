package server_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// wideFormat is a JSON schema of n required properties: about 18 bytes a
// property, past grammar's limit of 100,000 compile steps at 33,334.
func wideFormat(n int) string {
	var props, req []string
	for i := range n {
		props = append(props, fmt.Sprintf(`"p%d":{}`, i))
		req = append(req, fmt.Sprintf(`"p%d"`, i))
	}
	return `{"type":"object","properties":{` + strings.Join(props, ",") + `},"required":[` + strings.Join(req, ",") + `]}`
}

// TestFormatAfterModel: a request's format is compiled only once its model
// is found, so a missing model is a 404 whatever the format, even one that
// would be refused (a schema with "multipleOf") or one past the compile's
// limits; a found model's format past the limits is a 400 naming the limit.
func TestFormatAfterModel(t *testing.T) {
	_, base := newTestServer(t)
	const bad = `{"type":"number","multipleOf":3}`
	wide := wideFormat(40000)
	chat := func(model, format string) string {
		return `{"model":"` + model + `","messages":[{"role":"user","content":"hi"}],"stream":false,"format":` + format + `}`
	}
	oai := func(model, schema string) string {
		return `{"model":"` + model + `","messages":[{"role":"user","content":"hi"}],"max_tokens":2,` +
			`"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":` + schema + `}}}`
	}
	for _, c := range []struct {
		name, path, body string
		status           int
		want             string
	}{
		{"generate, refused format", "/api/generate", `{"model":"nope","prompt":"hi","format":` + bad + `}`, 404, "not found"},
		{"chat, refused format", "/api/chat", chat("nope", bad), 404, "not found"},
		{"chat, 40k properties", "/api/chat", chat("nope", wide), 404, "not found"},
		{"openai chat, refused format", "/v1/chat/completions", oai("nope", bad), 404, "not found"},
		{"openai chat, 40k properties", "/v1/chat/completions", oai("nope", wide), 404, "not found"},
		{"responses, refused format", "/v1/responses",
			`{"model":"nope","input":"hi","text":{"format":{"type":"json_schema","name":"x","schema":` + bad + `}}}`, 404, "not found"},
		{"found, refused format", "/api/chat", chat("stories260k", bad), 400, `keyword \"multipleOf\"`},
		{"found, 40k properties", "/api/chat", chat("stories260k", wide), 400, "more than 100000 steps"},
		{"openai found, 40k properties", "/v1/chat/completions", oai("stories260k", wide), 400, "more than 100000 steps"},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, _, data := post(t, base+c.path, c.body)
			if status != c.status || !strings.Contains(string(data), c.want) || !json.Valid(data) {
				t.Errorf("%d %.300s; want %d with %q", status, data, c.status, c.want)
			}
		})
	}
	// the OpenAI error names the field it is about
	for _, c := range []struct{ name, body, param string }{
		{"param of refused format", oai("nope", bad), "model"},
		{"param of 40k properties", oai("stories260k", wide), "response_format"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, data := post(t, base+"/v1/chat/completions", c.body)
			var e struct {
				Error struct {
					Param string `json:"param"`
				} `json:"error"`
			}
			if err := json.Unmarshal(data, &e); err != nil || e.Error.Param != c.param {
				t.Errorf("param %q (%v), want %q", e.Error.Param, err, c.param)
			}
		})
	}
}
