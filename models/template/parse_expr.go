package template

import "slices"

// Expression grammar, loosest first, as in jinja2's parser:
//
//	tuple     expr ("," expr)*
//	expr      or ("if" or ("else" expr)?)*
//	or, and, not, compare (== != < <= > >= in, not in)
//	math1     concat (("+"|"-") concat)*
//	concat    math2 ("~" math2)*
//	math2     pow (("*"|"/"|"//"|"%") pow)*
//	pow       unary ("**" unary)*
//	unary     ("-"|"+") unary | primary postfix* (filter | test | call)*

// parseTuple parses one expression or a tuple without parentheses.
func (p *parser) parseTuple(withCondexpr, explicitParens bool, extraEnd []string) (expr, error) {
	var items []expr
	isTuple := false
	for {
		if len(items) > 0 {
			if !p.isOp(",") {
				break
			}
			p.next()
		}
		t := p.cur()
		if t.kind == tVarEnd || t.kind == tBlockEnd || p.isOp(")") || (t.kind == tName && slices.Contains(extraEnd, t.val)) {
			break
		}
		x, err := p.parseExpression(withCondexpr)
		if err != nil {
			return nil, err
		}
		items = append(items, x)
		if p.isOp(",") {
			isTuple = true
		} else {
			break
		}
	}
	if !isTuple {
		if len(items) > 0 {
			return items[0], nil
		}
		if !explicitParens {
			return nil, p.errorf("Expected an expression, got '%s'", describe(p.cur()))
		}
	}
	return &listExpr{items: items, tuple: true}, nil
}

func (p *parser) parseExpression(withCondexpr bool) (expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	if withCondexpr {
		return p.parseCondExpr()
	}
	return p.parseOr()
}

func (p *parser) parseCondExpr() (expr, error) {
	x, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	for p.isName("if") {
		p.next()
		soft := p.soft
		p.soft = true
		c := &condExpr{then: x}
		if c.test, err = p.parseOr(); err != nil {
			return nil, err
		}
		if p.isName("else") {
			p.next()
			if c.els, err = p.parseExpression(true); err != nil {
				return nil, err
			}
		}
		p.soft = soft
		x = c
	}
	return x, nil
}

func (p *parser) parseOr() (expr, error) {
	x, err := p.parseAnd()
	for err == nil && p.isName("or") {
		p.next()
		var r expr
		r, err = p.parseAnd()
		x = &logicExpr{l: x, r: r}
	}
	return x, err
}

func (p *parser) parseAnd() (expr, error) {
	x, err := p.parseNot()
	for err == nil && p.isName("and") {
		p.next()
		var r expr
		r, err = p.parseNot()
		x = &logicExpr{and: true, l: x, r: r}
	}
	return x, err
}

func (p *parser) parseNot() (expr, error) {
	if p.isName("not") {
		p.next()
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer p.leave()
		x, err := p.parseNot()
		return &unaryExpr{op: "not", x: x}, err
	}
	return p.parseCompare()
}

func (p *parser) parseCompare() (expr, error) {
	x, err := p.parseMath1()
	if err != nil {
		return nil, err
	}
	c := &compareExpr{first: x}
	for {
		t := p.cur()
		var op string
		switch {
		case t.kind == tOp && (t.val == "==" || t.val == "!=" || t.val == "<" || t.val == "<=" || t.val == ">" || t.val == ">="):
			op = t.val
			p.next()
		case p.isName("in"):
			op = "in"
			p.next()
		case p.isName("not") && p.peek().kind == tName && p.peek().val == "in":
			op = "notin"
			p.next()
			p.next()
		default:
			if len(c.ops) == 0 {
				return x, nil
			}
			return c, nil
		}
		r, err := p.parseMath1()
		if err != nil {
			return nil, err
		}
		c.ops = append(c.ops, op)
		c.rest = append(c.rest, r)
	}
}

// parseBinary parses a left-associative chain of ops over operands.
func (p *parser) parseBinary(ops []string, operand func() (expr, error)) (expr, error) {
	x, err := operand()
	for err == nil && p.cur().kind == tOp && slices.Contains(ops, p.cur().val) {
		op := p.next().val
		var r expr
		r, err = operand()
		x = &binExpr{op: op, l: x, r: r}
	}
	return x, err
}

func (p *parser) parseMath1() (expr, error) {
	return p.parseBinary([]string{"+", "-"}, p.parseConcat)
}

func (p *parser) parseConcat() (expr, error) {
	return p.parseBinary([]string{"~"}, p.parseMath2)
}

func (p *parser) parseMath2() (expr, error) {
	return p.parseBinary([]string{"*", "/", "//", "%"}, p.parsePow)
}

func (p *parser) parsePow() (expr, error) {
	return p.parseBinary([]string{"**"}, func() (expr, error) { return p.parseUnary(true) })
}

func (p *parser) parseUnary(withFilter bool) (expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	var x expr
	var err error
	if p.isOp("-") || p.isOp("+") {
		op := p.next().val
		var inner expr
		if inner, err = p.parseUnary(false); err != nil {
			return nil, err
		}
		x = &unaryExpr{op: op, x: inner}
	} else if x, err = p.parsePrimary(); err != nil {
		return nil, err
	}
	if x, err = p.parsePostfix(x); err != nil {
		return nil, err
	}
	if withFilter {
		return p.parseFilterExpr(x)
	}
	return x, nil
}

func (p *parser) parsePrimary() (expr, error) {
	t := p.cur()
	switch t.kind {
	case tName:
		p.next()
		switch t.val {
		case "true", "True":
			return &constExpr{v: true}, nil
		case "false", "False":
			return &constExpr{v: false}, nil
		case "none", "None":
			return &constExpr{v: nil}, nil
		case "varargs", "kwargs", "caller":
			for _, m := range p.macros {
				m.usesVarargs = m.usesVarargs || t.val == "varargs"
				m.usesKwargs = m.usesKwargs || t.val == "kwargs"
				m.usesCaller = m.usesCaller || t.val == "caller"
			}
		}
		return &nameExpr{name: t.val}, nil
	case tString:
		s := t.val
		for p.next(); p.cur().kind == tString; p.next() {
			s += p.cur().val
		}
		return &constExpr{v: s}, nil
	case tInt, tFloat:
		p.next()
		return &constExpr{v: t.num}, nil
	case tOp:
		switch t.val {
		case "(":
			p.next()
			x, err := p.parseTuple(true, true, nil)
			if err != nil {
				return nil, err
			}
			return x, p.expectOp(")")
		case "[":
			p.next()
			l := &listExpr{}
			err := p.parseItems("]", func() error {
				x, err := p.parseExpression(true)
				l.items = append(l.items, x)
				return err
			})
			return l, err
		case "{":
			p.next()
			d := &dictExpr{}
			err := p.parseItems("}", func() error {
				k, err := p.parseExpression(true)
				if err != nil {
					return err
				}
				if err := p.expectOp(":"); err != nil {
					return err
				}
				v, err := p.parseExpression(true)
				d.keys, d.vals = append(d.keys, k), append(d.vals, v)
				return err
			})
			return d, err
		}
	}
	return nil, p.errorf("unexpected '%s'", describe(t))
}

// parseItems parses comma-separated items up to close (a trailing comma is allowed).
func (p *parser) parseItems(close string, item func() error) error {
	for n := 0; !p.isOp(close); n++ {
		if n > 0 {
			if err := p.expectOp(","); err != nil {
				return err
			}
			if p.isOp(close) {
				break
			}
		}
		if err := item(); err != nil {
			return err
		}
	}
	p.next()
	return nil
}

func (p *parser) parsePostfix(x expr) (expr, error) {
	for {
		var err error
		switch {
		case p.isOp("."):
			p.next()
			t := p.next()
			switch t.kind {
			case tName:
				x = &getattrExpr{obj: x, name: t.val}
			case tInt:
				x = &getitemExpr{obj: x, key: &constExpr{v: t.num}}
			default:
				return nil, syntaxErrorf(t.line, "expected name or number")
			}
		case p.isOp("["):
			p.next()
			var keys []expr
			err = p.parseItems("]", func() error {
				k, err := p.parseSubscribed()
				keys = append(keys, k)
				return err
			})
			if err != nil {
				return nil, err
			}
			switch len(keys) {
			case 0:
				x = &getitemExpr{obj: x, key: &listExpr{tuple: true}} // x[] is x[()] in jinja2
			case 1:
				if s, ok := keys[0].(*sliceExpr); ok {
					s.obj = x
					x = s
				} else {
					x = &getitemExpr{obj: x, key: keys[0]}
				}
			default:
				// x[a:b, c] indexes with a tuple holding a slice object, which
				// nothing here accepts: it gives an undefined, as in jinja2.
				for i, k := range keys {
					if _, ok := k.(*sliceExpr); ok {
						keys[i] = &constExpr{v: &undefined{hint: "slice objects are not supported"}}
					}
				}
				x = &getitemExpr{obj: x, key: &listExpr{items: keys, tuple: true}}
			}
		case p.isOp("("):
			c := &callExpr{fn: x}
			if c.args, err = p.parseCallArgs(); err != nil {
				return nil, err
			}
			x = c
		default:
			return x, nil
		}
	}
}

// parseSubscribed parses one subscript: an expression or a slice a:b:c.
func (p *parser) parseSubscribed() (expr, error) {
	var parts [3]expr
	var err error
	if !p.isOp(":") {
		if parts[0], err = p.parseExpression(true); err != nil {
			return nil, err
		}
		if !p.isOp(":") {
			return parts[0], nil
		}
	}
	for i := 1; i < 3 && p.isOp(":"); i++ {
		p.next()
		if !p.isOp("]") && !p.isOp(",") && !p.isOp(":") {
			if parts[i], err = p.parseExpression(true); err != nil {
				return nil, err
			}
		}
	}
	return &sliceExpr{start: parts[0], stop: parts[1], step: parts[2]}, nil
}

func (p *parser) parseCallArgs() (callArgs, error) {
	var a callArgs
	if err := p.expectOp("("); err != nil {
		return a, err
	}
	err := p.parseItems(")", func() error {
		var err error
		switch {
		case p.isOp("*"):
			p.next()
			a.dynArgs, err = p.parseExpression(true)
		case p.isOp("**"):
			p.next()
			a.dynKwargs, err = p.parseExpression(true)
		case p.cur().kind == tName && p.peek().kind == tOp && p.peek().val == "=":
			name := p.next().val
			p.next()
			var v expr
			v, err = p.parseExpression(true)
			a.kwNames, a.kwVals = append(a.kwNames, name), append(a.kwVals, v)
		default:
			if a.dynArgs != nil || a.dynKwargs != nil || len(a.kwNames) > 0 {
				return p.errorf("Invalid argument syntax")
			}
			var v expr
			v, err = p.parseExpression(true)
			a.pos = append(a.pos, v)
		}
		return err
	})
	return a, err
}

func (p *parser) parseFilterExpr(x expr) (expr, error) {
	for {
		var err error
		switch {
		case p.isOp("|"):
			p.next()
			x, err = p.parseFilter(x)
		case p.isName("is"):
			p.next()
			x, err = p.parseTest(x)
		case p.isOp("("):
			c := &callExpr{fn: x}
			c.args, err = p.parseCallArgs()
			x = c
		default:
			return x, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// dottedName parses name(.name)*, the name of a filter or test.
func (p *parser) dottedName() (string, error) {
	name, err := p.expectName()
	for err == nil && p.isOp(".") {
		p.next()
		var part string
		part, err = p.expectName()
		name += "." + part
	}
	return name, err
}

func (p *parser) parseFilter(arg expr) (*filterExpr, error) {
	line := p.cur().line
	name, err := p.dottedName()
	if err != nil {
		return nil, err
	}
	f := &filterExpr{arg: arg, name: name, fn: filters[name]}
	if f.fn == nil && !p.soft {
		return nil, syntaxErrorf(line, "No filter named '%s'.", name)
	}
	if p.isOp("(") {
		if f.args, err = p.parseCallArgs(); err != nil {
			return nil, err
		}
	}
	return f, nil
}

func (p *parser) parseTest(arg expr) (expr, error) {
	line := p.cur().line
	t := &testExpr{arg: arg}
	if p.isName("not") {
		p.next()
		t.negate = true
	}
	name, err := p.dottedName()
	if err != nil {
		return nil, err
	}
	t.name, t.fn = name, tests[name]
	if t.fn == nil && !p.soft {
		return nil, syntaxErrorf(line, "No test named '%s'.", name)
	}
	c := p.cur()
	switch {
	case p.isOp("("):
		if t.args, err = p.parseCallArgs(); err != nil {
			return nil, err
		}
	case (c.kind == tName || c.kind == tString || c.kind == tInt || c.kind == tFloat || p.isOp("[") || p.isOp("{")) &&
		!p.isName("else") && !p.isName("or") && !p.isName("and"):
		if p.isName("is") {
			return nil, p.errorf("You cannot chain multiple tests with is")
		}
		a, err := p.parsePrimary()
		if err != nil {
			return nil, err
		}
		if a, err = p.parsePostfix(a); err != nil {
			return nil, err
		}
		t.args.pos = []expr{a}
	}
	return t, nil
}
