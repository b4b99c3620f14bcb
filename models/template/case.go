package template

import "fmt"

// DecodeCase reads a rendering case as conversations.json in the template
// fixtures and `folio dev render-template --case` hold it:
//
//	{"messages": [...], "tools": [...] | null, "add_generation_prompt": bool,
//	 "bos_token": "..." | null, "eos_token": "..." | null, "vars": {...}}
//
// Messages are kept exactly as written (Message.Raw); a null or missing token
// stays undefined; "vars" holds further variables such as enable_thinking.
// Other keys (a case's "name" and "about") are ignored.
func DecodeCase(data []byte) (Context, error) {
	v, err := DecodeJSON(data)
	if err != nil {
		return Context{}, err
	}
	obj, ok := v.(Object)
	if !ok {
		return Context{}, fmt.Errorf("template: a case is a JSON object")
	}
	return CaseContext(obj)
}

// CaseContext is DecodeCase for an already decoded object.
func CaseContext(obj Object) (Context, error) {
	var c Context
	for _, m := range obj {
		switch m.Key {
		case "messages":
			list, ok := m.Value.([]any)
			if !ok {
				return c, fmt.Errorf("template: case: messages must be an array")
			}
			for i, x := range list {
				msg, ok := x.(Object)
				if !ok {
					return c, fmt.Errorf("template: case: message %d is not an object", i)
				}
				c.Messages = append(c.Messages, Message{Raw: msg})
			}
		case "tools":
			if m.Value == nil {
				continue
			}
			tools, ok := m.Value.([]any)
			if !ok {
				return c, fmt.Errorf("template: case: tools must be an array or null")
			}
			c.Tools = tools
		case "add_generation_prompt":
			b, ok := m.Value.(bool)
			if !ok {
				return c, fmt.Errorf("template: case: add_generation_prompt must be true or false")
			}
			c.AddGenerationPrompt = b
		case "bos_token", "eos_token":
			if m.Value == nil {
				continue
			}
			s, ok := m.Value.(string)
			if !ok {
				return c, fmt.Errorf("template: case: %s must be a string or null", m.Key)
			}
			if m.Key == "bos_token" {
				c.BOSToken = &s
			} else {
				c.EOSToken = &s
			}
		case "vars":
			vars, ok := m.Value.(Object)
			if !ok {
				return c, fmt.Errorf("template: case: vars must be an object")
			}
			c.Vars = map[string]any{}
			for _, v := range vars {
				c.Vars[v.Key] = v.Value
			}
		}
	}
	return c, nil
}
