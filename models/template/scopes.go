package template

// Static scoping, as jinja2's compiler does it (idtracking.py). Each frame
// (the template, a for body, a macro body, the bodies of call, set, filter
// and with blocks) decides once, before it runs, where each name it uses
// comes from. A name whose first use in the frame is an assignment, and that
// no enclosing frame mentions, starts out undefined: a loop nested before
// the assignment sees it undefined even if the caller passed a variable of
// that name. Everything else behaves like a lookup through enclosing scopes,
// which is what scope.lookup does; so the analysis only has to find the
// names to bind to undefined when a frame starts.

type loadKind uint8

const (
	loadResolve   loadKind = iota // from the context (or an enclosing scope)
	loadAlias                     // an enclosing frame's variable
	loadUndefined                 // undefined until assigned
	loadParam                     // a parameter or loop target
)

// symbols is one frame's table during analysis.
type symbols struct {
	parent *symbols
	refs   map[string]loadKind
	stores map[string]bool
}

func newSymbols(parent *symbols) *symbols {
	return &symbols{parent: parent, refs: map[string]loadKind{}, stores: map[string]bool{}}
}

func (s *symbols) findRef(name string) bool {
	for ; s != nil; s = s.parent {
		if _, ok := s.refs[name]; ok {
			return true
		}
	}
	return false
}

func (s *symbols) copy() *symbols {
	c := newSymbols(s.parent)
	for k, v := range s.refs {
		c.refs[k] = v
	}
	for k := range s.stores {
		c.stores[k] = true
	}
	return c
}

func (s *symbols) store(name string) {
	s.stores[name] = true
	if _, ok := s.refs[name]; ok {
		return
	}
	if s.parent != nil && s.parent.findRef(name) {
		s.refs[name] = loadAlias
	} else {
		s.refs[name] = loadUndefined
	}
}

func (s *symbols) param(name string) {
	s.stores[name] = true
	s.refs[name] = loadParam
}

func (s *symbols) load(name string) {
	if !s.findRef(name) {
		s.refs[name] = loadResolve
	}
}

// branchUpdate merges the branches of an if: a name assigned in some
// branches only is looked up, not undefined, where the others run.
func (s *symbols) branchUpdate(branches []*symbols) {
	counts := map[string]int{}
	for _, b := range branches {
		for name := range b.stores {
			if !s.stores[name] {
				counts[name]++
			}
		}
	}
	for _, b := range branches {
		for name, k := range b.refs {
			s.refs[name] = k
		}
		for name := range b.stores {
			s.stores[name] = true
		}
	}
	for name, n := range counts {
		if n == len(branches) {
			continue
		}
		if s.parent != nil && s.parent.findRef(name) {
			s.refs[name] = loadAlias
		} else {
			s.refs[name] = loadResolve
		}
	}
}

func (s *symbols) undefined() []string {
	var out []string
	for name, k := range s.refs {
		if k == loadUndefined {
			out = append(out, name)
		}
	}
	return out
}

// frameAnalyzer walks one frame; child frames wait until the frame is
// complete, since they see all of its names whatever their position.
type frameAnalyzer struct {
	sym     *symbols
	pending []func(parent *symbols)
}

// analyzeFrame analyzes a frame's body and its child frames and returns the
// names to bind to undefined when the frame starts. params are its
// parameters (loop targets, macro arguments); exprs are evaluated inside it
// before the body (macro defaults).
func analyzeFrame(parent *symbols, params []string, exprs []expr, body []stmt) []string {
	a := &frameAnalyzer{sym: newSymbols(parent)}
	for _, p := range params {
		a.sym.param(p)
	}
	for _, x := range exprs {
		a.expr(x)
	}
	a.body(body)
	for _, child := range a.pending {
		child(a.sym)
	}
	return a.sym.undefined()
}

func (a *frameAnalyzer) body(body []stmt) {
	for _, st := range body {
		a.stmt(st)
	}
}

func targetNames(t target, out []string) []string {
	if t.isTup {
		for _, sub := range t.tuple {
			out = targetNames(sub, out)
		}
		return out
	}
	if t.ns != "" {
		return out
	}
	return append(out, t.name)
}

func (a *frameAnalyzer) target(t target) {
	if t.ns != "" {
		a.sym.load(t.ns)
		return
	}
	for _, name := range targetNames(t, nil) {
		a.sym.store(name)
	}
}

func (a *frameAnalyzer) stmt(st stmt) {
	switch st := st.(type) {
	case *outputStmt:
		a.expr(st.x)
	case *ifStmt:
		a.ifChain(st.conds, st.bodies, st.els)
	case *forStmt:
		a.expr(st.iter)
		a.pending = append(a.pending, func(parent *symbols) {
			st.bodyUndef = analyzeFrame(parent, targetNames(st.target, []string{"loop"}), nil, st.body)
			st.elseUndef = analyzeFrame(parent, nil, nil, st.els)
		})
	case *setStmt:
		a.expr(st.x)
		a.target(st.target)
	case *setBlockStmt:
		a.target(st.target)
		a.pending = append(a.pending, func(parent *symbols) {
			st.undef = analyzeFrame(parent, nil, nil, st.body)
		})
	case *macroStmt:
		a.sym.store(st.m.name)
		a.pending = append(a.pending, func(parent *symbols) { st.m.analyze(parent) })
	case *callBlockStmt:
		a.expr(st.call)
		a.pending = append(a.pending, func(parent *symbols) { st.caller.analyze(parent) })
	case *filterBlockStmt:
		for _, f := range st.filters {
			a.expr(f)
		}
		a.pending = append(a.pending, func(parent *symbols) {
			st.undef = analyzeFrame(parent, nil, nil, st.body)
		})
	case *withStmt:
		for _, x := range st.values {
			a.expr(x)
		}
		a.pending = append(a.pending, func(parent *symbols) {
			w := &frameAnalyzer{sym: newSymbols(parent)}
			for _, t := range st.targets {
				w.target(t)
			}
			w.body(st.body)
			for _, child := range w.pending {
				child(w.sym)
			}
			st.undef = w.sym.undefined()
		})
	}
}

func (m *macroDef) analyze(parent *symbols) {
	params := append([]string{"caller", "varargs", "kwargs"}, m.params...)
	var defaults []expr
	for _, d := range m.defaults {
		if d != nil {
			defaults = append(defaults, d)
		}
	}
	m.undef = analyzeFrame(parent, params, defaults, m.body)
}

// ifChain visits an if with its elifs and else as jinja2 does: three
// branches (body, all elifs, else), each elif an if of its own.
func (a *frameAnalyzer) ifChain(conds []expr, bodies [][]stmt, els []stmt) {
	a.expr(conds[0])
	orig := a.sym
	branch := func(visit func()) *symbols {
		a.sym = orig.copy()
		visit()
		b := a.sym
		a.sym = orig
		return b
	}
	body := branch(func() { a.body(bodies[0]) })
	elifs := branch(func() {
		for i := 1; i < len(conds); i++ {
			a.ifChain(conds[i:i+1], bodies[i:i+1], nil)
		}
	})
	elseB := branch(func() { a.body(els) })
	a.sym.branchUpdate([]*symbols{body, elifs, elseB})
}

// expr notes the names an expression reads.
func (a *frameAnalyzer) expr(x expr) {
	switch x := x.(type) {
	case *nameExpr:
		a.sym.load(x.name)
	case *listExpr:
		for _, it := range x.items {
			a.expr(it)
		}
	case *dictExpr:
		for i := range x.keys {
			a.expr(x.keys[i])
			a.expr(x.vals[i])
		}
	case *getattrExpr:
		a.expr(x.obj)
	case *getitemExpr:
		a.expr(x.obj)
		a.expr(x.key)
	case *sliceExpr:
		for _, p := range []expr{x.obj, x.start, x.stop, x.step} {
			if p != nil {
				a.expr(p)
			}
		}
	case *callExpr:
		a.expr(x.fn)
		a.args(x.args)
	case *filterExpr:
		if x.arg != nil {
			a.expr(x.arg)
		}
		a.args(x.args)
	case *testExpr:
		a.expr(x.arg)
		a.args(x.args)
	case *binExpr:
		a.expr(x.l)
		a.expr(x.r)
	case *unaryExpr:
		a.expr(x.x)
	case *logicExpr:
		a.expr(x.l)
		a.expr(x.r)
	case *compareExpr:
		a.expr(x.first)
		for _, r := range x.rest {
			a.expr(r)
		}
	case *condExpr:
		a.expr(x.test)
		a.expr(x.then)
		if x.els != nil {
			a.expr(x.els)
		}
	}
}

func (a *frameAnalyzer) args(c callArgs) {
	for _, x := range c.pos {
		a.expr(x)
	}
	for _, x := range c.kwVals {
		a.expr(x)
	}
	if c.dynArgs != nil {
		a.expr(c.dynArgs)
	}
	if c.dynKwargs != nil {
		a.expr(c.dynKwargs)
	}
}

// bindUndefined starts a frame's scope with its names that are undefined
// until assigned.
func bindUndefined(s *scope, names []string) {
	for _, n := range names {
		s.set(n, undef(n))
	}
}
