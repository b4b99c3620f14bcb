package template

// Statements.
type stmt interface{ stmtLine() int }

type (
	textStmt   struct{ text string }
	outputStmt struct {
		x    expr
		line int
	}
	ifStmt struct {
		conds  []expr
		bodies [][]stmt
		els    []stmt
		line   int
	}
	forStmt struct {
		target    target
		iter      expr
		cond      expr // the loop's "if" filter, or nil
		body, els []stmt
		recursive bool
		line      int
		// names bound to undefined when an iteration (or the else) starts
		bodyUndef, elseUndef []string
	}
	setStmt struct {
		target target
		x      expr
		line   int
	}
	setBlockStmt struct {
		target  target
		filters []*filterExpr // applied to the captured body; arg is nil
		body    []stmt
		line    int
		undef   []string
	}
	macroStmt struct {
		m    *macroDef
		line int
	}
	callBlockStmt struct {
		call   *callExpr
		caller *macroDef
		line   int
	}
	filterBlockStmt struct {
		filters []*filterExpr
		body    []stmt
		line    int
		undef   []string
	}
	withStmt struct {
		targets []target
		values  []expr
		body    []stmt
		line    int
		undef   []string
	}
	loopCtlStmt struct {
		brk  bool
		line int
	}
	// unsupportedStmt is include, import, from and extends: there is no loader.
	unsupportedStmt struct{ line int }
)

func (*textStmt) stmtLine() int          { return 0 }
func (s *outputStmt) stmtLine() int      { return s.line }
func (s *ifStmt) stmtLine() int          { return s.line }
func (s *forStmt) stmtLine() int         { return s.line }
func (s *setStmt) stmtLine() int         { return s.line }
func (s *setBlockStmt) stmtLine() int    { return s.line }
func (s *macroStmt) stmtLine() int       { return s.line }
func (s *callBlockStmt) stmtLine() int   { return s.line }
func (s *filterBlockStmt) stmtLine() int { return s.line }
func (s *withStmt) stmtLine() int        { return s.line }
func (s *loopCtlStmt) stmtLine() int     { return s.line }
func (s *unsupportedStmt) stmtLine() int { return s.line }

// target is where set, for and with assign: a name, a tuple of targets, or
// (set only) an attribute of a namespace.
type target struct {
	name  string
	tuple []target
	isTup bool
	ns    string // set ns.attr: ns is the variable, name the attribute
}

// macroDef is a macro, or the body of a call block (the caller).
type macroDef struct {
	name     string
	params   []string
	defaults []expr // one per param, nil where there is none
	body     []stmt
	// the body refers to these special names, which decides which extra
	// arguments the macro accepts, as jinja2 decides
	usesVarargs, usesKwargs, usesCaller bool
	undef                               []string // bound to undefined when a call starts
}

// Expressions.
type expr interface{}

type (
	constExpr struct{ v Value }
	nameExpr  struct{ name string }
	listExpr  struct {
		items []expr
		tuple bool
	}
	dictExpr    struct{ keys, vals []expr }
	getattrExpr struct {
		obj  expr
		name string
	}
	getitemExpr struct{ obj, key expr }
	sliceExpr   struct{ obj, start, stop, step expr }
	callExpr    struct {
		fn   expr
		args callArgs
	}
	filterExpr struct {
		arg  expr // nil in a filter block or block set
		name string
		args callArgs
		fn   filterFunc // nil if unknown: an error when evaluated
	}
	testExpr struct {
		arg    expr
		name   string
		args   callArgs
		fn     testFunc
		negate bool
	}
	binExpr struct {
		op   string // + - * / // % ** ~
		l, r expr
	}
	unaryExpr struct {
		op string // - + not
		x  expr
	}
	logicExpr struct {
		and  bool
		l, r expr
	}
	compareExpr struct {
		first expr
		ops   []string // == != < <= > >= in notin
		rest  []expr
	}
	condExpr struct{ test, then, els expr } // els may be nil
)

type callArgs struct {
	pos       []expr
	kwNames   []string
	kwVals    []expr
	dynArgs   expr
	dynKwargs expr
}
