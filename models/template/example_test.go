package template_test

import (
	"fmt"

	"folio/models/template"
)

// A server decodes the request's tools with DecodeJSON (key order kept),
// builds Messages, and renders the model's chat template.
func Example() {
	tmpl, err := template.Parse(`{% for m in messages %}<|{{ m.role }}|>{{ m.content }}
{% endfor %}{% if tools %}tools: {{ tools|tojson }}
{% endif %}{% if add_generation_prompt %}<|assistant|>{% endif %}`)
	if err != nil {
		panic(err)
	}
	tools, err := template.DecodeJSON([]byte(`[{"type": "function", "function": {"name": "get_weather"}}]`))
	if err != nil {
		panic(err)
	}
	out, err := tmpl.Render(template.Context{
		Messages:            []template.Message{{Role: "user", Content: "Hi"}},
		Tools:               tools.([]any),
		AddGenerationPrompt: true,
	})
	if err != nil {
		panic(err)
	}
	fmt.Print(out)
	// Output:
	// <|user|>Hi
	// tools: [{"type": "function", "function": {"name": "get_weather"}}]
	// <|assistant|>
}
