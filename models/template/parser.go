package template

import (
	"slices"
	"strings"
)

// parser builds statements from tokens, following jinja2's parser. Unknown
// filters and tests are syntax errors, except directly inside an if (or a
// conditional expression), where jinja2 only fails if they are reached.
type parser struct {
	toks   []token
	pos    int
	depth  int         // nesting of blocks and expressions, bounded by maxParseDepth
	soft   bool        // directly inside an if: unknown filters fail at render time
	loops  int         // enclosing for loops, for break and continue
	macros []*macroDef // enclosing macros, to note the special names they use
}

func (p *parser) cur() token  { return p.toks[p.pos] }
func (p *parser) peek() token { return p.toks[min(p.pos+1, len(p.toks)-1)] }
func (p *parser) next() token {
	t := p.toks[p.pos]
	if p.pos < len(p.toks)-1 {
		p.pos++
	}
	return t
}

func (p *parser) isOp(op string) bool { t := p.cur(); return t.kind == tOp && t.val == op }

func (p *parser) isName(name string) bool { t := p.cur(); return t.kind == tName && t.val == name }

func (p *parser) errorf(format string, args ...any) *Error {
	return syntaxErrorf(p.cur().line, format, args...)
}

func describe(t token) string {
	switch t.kind {
	case tEOF:
		return "end of template"
	case tVarEnd:
		return "end of print statement"
	case tBlockEnd:
		return "end of statement block"
	case tString:
		return "string"
	}
	return t.val
}

func (p *parser) expectOp(op string) error {
	if !p.isOp(op) {
		return p.errorf("expected token '%s', got '%s'", op, describe(p.cur()))
	}
	p.next()
	return nil
}

func (p *parser) expectName() (string, error) {
	t := p.cur()
	if t.kind != tName {
		return "", p.errorf("expected token 'name', got '%s'", describe(t))
	}
	p.next()
	return t.val, nil
}

func (p *parser) expectBlockEnd() error {
	if p.cur().kind != tBlockEnd {
		return p.errorf("expected token 'end of statement block', got '%s'", describe(p.cur()))
	}
	p.next()
	return nil
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxParseDepth {
		return &Error{Msg: "template nests blocks or expressions too deeply", Line: p.cur().line, kind: ErrLimit}
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

func (p *parser) parseTemplate() ([]stmt, error) {
	body, end, err := p.subparse(nil)
	if err != nil {
		return nil, err
	}
	if end != "" {
		return nil, p.errorf("Encountered unknown tag '%s'.", end)
	}
	return body, nil
}

// subparse parses statements up to one of the block tags in ends (consumed,
// and returned) or the end of the template (ends must then be nil).
func (p *parser) subparse(ends []string) ([]stmt, string, error) {
	if err := p.enter(); err != nil {
		return nil, "", err
	}
	defer p.leave()
	var body []stmt
	for {
		t := p.cur()
		switch t.kind {
		case tData:
			p.next()
			body = append(body, &textStmt{text: t.val})
		case tVarBegin:
			p.next()
			x, err := p.parseTuple(true, false, nil)
			if err != nil {
				return nil, "", err
			}
			if p.cur().kind != tVarEnd {
				return nil, "", p.errorf("expected token 'end of print statement', got '%s'", describe(p.cur()))
			}
			p.next()
			body = append(body, &outputStmt{x: x, line: t.line})
		case tBlockBegin:
			p.next()
			name := p.cur()
			if name.kind != tName {
				return nil, "", p.errorf("tag name expected")
			}
			if slices.Contains(ends, name.val) {
				p.next()
				return body, name.val, nil
			}
			s, err := p.parseStatement()
			if err != nil {
				return nil, "", err
			}
			if s != nil {
				body = append(body, s)
			}
		case tEOF:
			if ends != nil {
				want := "'" + strings.Join(ends, "' or '") + "'"
				inner := ""
				for _, end := range ends {
					if name, ok := strings.CutPrefix(end, "end"); ok {
						inner = " The innermost block that needs to be closed is '" + name + "'."
						break
					}
				}
				return nil, "", p.errorf("Unexpected end of template. Jinja was looking for the following tags: %s.%s", want, inner)
			}
			return body, "", nil
		default:
			return nil, "", p.errorf("unexpected '%s'", describe(t))
		}
	}
}

// parseStatement parses a block tag whose name is the current token.
func (p *parser) parseStatement() (stmt, error) {
	t := p.next()
	line := t.line
	switch t.val {
	case "if":
		return p.parseIf(line)
	case "for":
		return p.parseFor(line)
	case "set":
		return p.parseSet(line)
	case "macro":
		return p.parseMacro(line)
	case "call":
		return p.parseCallBlock(line)
	case "filter":
		return p.parseFilterBlock(line)
	case "with":
		return p.parseWith(line)
	case "break", "continue":
		if p.loops == 0 {
			return nil, syntaxErrorf(line, "'%s' outside loop", t.val)
		}
		return &loopCtlStmt{brk: t.val == "break", line: line}, p.expectBlockEnd()
	case "generation", "block", "autoescape":
		// generation is transformers' marker for assistant text; a block renders
		// in place without extends; autoescape is not modelled (output is not HTML).
		for p.cur().kind != tBlockEnd && p.cur().kind != tEOF {
			p.next()
		}
		if err := p.expectBlockEnd(); err != nil {
			return nil, err
		}
		body, _, err := p.subparseScoped([]string{"end" + t.val})
		if err != nil {
			return nil, err
		}
		for p.cur().kind == tName {
			p.next() // {% endblock name %}
		}
		return &withStmt{body: body, line: line}, p.expectBlockEnd()
	case "include", "import", "from", "extends":
		for p.cur().kind != tBlockEnd && p.cur().kind != tEOF {
			p.next()
		}
		return &unsupportedStmt{line: line}, p.expectBlockEnd()
	}
	return nil, syntaxErrorf(line, "Encountered unknown tag '%s'.", t.val)
}

// subparseScoped parses a body that is not directly inside an if.
func (p *parser) subparseScoped(ends []string) ([]stmt, string, error) {
	soft := p.soft
	p.soft = false
	defer func() { p.soft = soft }()
	return p.subparse(ends)
}

func (p *parser) parseIf(line int) (stmt, error) {
	soft := p.soft
	p.soft = true
	defer func() { p.soft = soft }()
	s := &ifStmt{line: line}
	for {
		cond, err := p.parseTuple(false, false, nil)
		if err != nil {
			return nil, err
		}
		if err := p.expectBlockEnd(); err != nil {
			return nil, err
		}
		body, end, err := p.subparse([]string{"elif", "else", "endif"})
		if err != nil {
			return nil, err
		}
		s.conds = append(s.conds, cond)
		s.bodies = append(s.bodies, body)
		switch end {
		case "elif":
			continue
		case "else":
			if err := p.expectBlockEnd(); err != nil {
				return nil, err
			}
			if s.els, _, err = p.subparse([]string{"endif"}); err != nil {
				return nil, err
			}
		}
		return s, p.expectBlockEnd()
	}
}

func (p *parser) parseFor(line int) (stmt, error) {
	s := &forStmt{line: line}
	var err error
	if s.target, err = p.parseTarget(false, "in"); err != nil {
		return nil, err
	}
	if !p.isName("in") {
		return nil, p.errorf("expected token 'in', got '%s'", describe(p.cur()))
	}
	p.next()
	if s.iter, err = p.parseTuple(false, false, []string{"recursive"}); err != nil {
		return nil, err
	}
	if p.isName("if") {
		p.next()
		if s.cond, err = p.parseExpression(true); err != nil {
			return nil, err
		}
	}
	if p.isName("recursive") {
		p.next()
		s.recursive = true
	}
	if err := p.expectBlockEnd(); err != nil {
		return nil, err
	}
	p.loops++
	body, end, err := p.subparseScoped([]string{"endfor", "else"})
	p.loops--
	if err != nil {
		return nil, err
	}
	s.body = body
	if end == "else" {
		if err := p.expectBlockEnd(); err != nil {
			return nil, err
		}
		if s.els, _, err = p.subparseScoped([]string{"endfor"}); err != nil {
			return nil, err
		}
	}
	return s, p.expectBlockEnd()
}

func (p *parser) parseTargetAtom(end string) (target, error) {
	if p.isOp("(") {
		p.next()
		if err := p.enter(); err != nil {
			return target{}, err
		}
		inner, err := p.parseTarget(false, end)
		p.leave()
		if err != nil {
			return inner, err
		}
		return inner, p.expectOp(")")
	}
	name, err := p.expectName()
	if err != nil {
		return target{}, err
	}
	switch name {
	case "true", "false", "none", "True", "False", "None":
		return target{}, p.errorf("can't assign to '%s'", name)
	}
	return target{name: name}, nil
}

// parseTarget parses an assignment target: a name, a tuple of names
// (optionally in parentheses), or, for set, ns.attr.
func (p *parser) parseTarget(withNamespace bool, end string) (target, error) {
	if withNamespace && p.cur().kind == tName && p.peek().kind == tOp && p.peek().val == "." {
		ns := p.next().val
		p.next()
		attr, err := p.expectName()
		return target{ns: ns, name: attr}, err
	}
	var items []target
	comma := false
	for {
		t, err := p.parseTargetAtom(end)
		if err != nil {
			return t, err
		}
		items = append(items, t)
		if !p.isOp(",") {
			break
		}
		p.next()
		comma = true
		if p.cur().kind == tBlockEnd || p.isOp("=") || p.isName(end) || p.isOp(")") {
			break
		}
	}
	if !comma {
		return items[0], nil
	}
	return target{tuple: items, isTup: true}, nil
}

func (p *parser) parseSet(line int) (stmt, error) {
	t, err := p.parseTarget(true, "")
	if err != nil {
		return nil, err
	}
	if p.isOp("=") {
		p.next()
		x, err := p.parseTuple(true, false, nil)
		if err != nil {
			return nil, err
		}
		return &setStmt{target: t, x: x, line: line}, p.expectBlockEnd()
	}
	s := &setBlockStmt{target: t, line: line}
	if s.filters, err = p.parseFilterChain(false); err != nil {
		return nil, err
	}
	if err := p.expectBlockEnd(); err != nil {
		return nil, err
	}
	if s.body, _, err = p.subparseScoped([]string{"endset"}); err != nil {
		return nil, err
	}
	return s, p.expectBlockEnd()
}

// parseFilterChain parses "name(args) | name(args) ...", the filters of a
// filter block (first has no leading pipe) or of a block set (each has one).
func (p *parser) parseFilterChain(first bool) ([]*filterExpr, error) {
	var out []*filterExpr
	for first || p.isOp("|") {
		if !first {
			p.next()
		}
		first = false
		f, err := p.parseFilter(nil)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

func (p *parser) parseFilterBlock(line int) (stmt, error) {
	filters, err := p.parseFilterChain(true)
	if err != nil {
		return nil, err
	}
	if err := p.expectBlockEnd(); err != nil {
		return nil, err
	}
	body, _, err := p.subparseScoped([]string{"endfilter"})
	if err != nil {
		return nil, err
	}
	return &filterBlockStmt{filters: filters, body: body, line: line}, p.expectBlockEnd()
}

func (p *parser) parseWith(line int) (stmt, error) {
	s := &withStmt{line: line}
	for p.cur().kind != tBlockEnd {
		if len(s.targets) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
		}
		t, err := p.parseTarget(false, "")
		if err != nil {
			return nil, err
		}
		if err := p.expectOp("="); err != nil {
			return nil, err
		}
		x, err := p.parseExpression(true)
		if err != nil {
			return nil, err
		}
		s.targets = append(s.targets, t)
		s.values = append(s.values, x)
	}
	p.next()
	body, _, err := p.subparseScoped([]string{"endwith"})
	if err != nil {
		return nil, err
	}
	s.body = body
	return s, p.expectBlockEnd()
}

// parseSignature parses "(a, b=default, ...)" into m.
func (p *parser) parseSignature(m *macroDef) error {
	soft := p.soft // defaults belong to the macro's frame, never directly inside an if
	p.soft = false
	defer func() { p.soft = soft }()
	if err := p.expectOp("("); err != nil {
		return err
	}
	for !p.isOp(")") {
		if len(m.params) > 0 {
			if err := p.expectOp(","); err != nil {
				return err
			}
			if p.isOp(")") {
				break
			}
		}
		name, err := p.expectName()
		if err != nil {
			return err
		}
		var def expr
		if p.isOp("=") {
			p.next()
			if def, err = p.parseExpression(true); err != nil {
				return err
			}
		} else if len(m.defaults) > 0 && m.defaults[len(m.defaults)-1] != nil {
			return p.errorf("non-default argument follows default argument")
		}
		m.params = append(m.params, name)
		m.defaults = append(m.defaults, def)
	}
	p.next()
	return nil
}

func (p *parser) parseMacroBody(m *macroDef, end string) error {
	p.macros = append(p.macros, m)
	loops := p.loops
	p.loops = 0
	body, _, err := p.subparseScoped([]string{end})
	p.loops = loops
	p.macros = p.macros[:len(p.macros)-1]
	m.body = body
	return err
}

func (p *parser) parseMacro(line int) (stmt, error) {
	name, err := p.expectName()
	if err != nil {
		return nil, err
	}
	m := &macroDef{name: name}
	if err := p.parseSignature(m); err != nil {
		return nil, err
	}
	if err := p.expectBlockEnd(); err != nil {
		return nil, err
	}
	if err := p.parseMacroBody(m, "endmacro"); err != nil {
		return nil, err
	}
	return &macroStmt{m: m, line: line}, p.expectBlockEnd()
}

func (p *parser) parseCallBlock(line int) (stmt, error) {
	caller := &macroDef{name: "caller"}
	if p.isOp("(") {
		if err := p.parseSignature(caller); err != nil {
			return nil, err
		}
	}
	x, err := p.parseExpression(true)
	if err != nil {
		return nil, err
	}
	call, ok := x.(*callExpr)
	if !ok {
		return nil, syntaxErrorf(line, "expected call")
	}
	if err := p.expectBlockEnd(); err != nil {
		return nil, err
	}
	if err := p.parseMacroBody(caller, "endcall"); err != nil {
		return nil, err
	}
	return &callBlockStmt{call: call, caller: caller, line: line}, p.expectBlockEnd()
}
