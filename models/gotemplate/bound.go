package gotemplate

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"

	jinja "folio/models/template"
)

// checkCalls refuses a template whose {{ template }} calls recurse, nest
// deeper than lim.MaxDepth, or expand to more than lim.MaxSteps nodes:
// its nodes, each call counted as the nodes of the template it calls, each
// range body once. Calls are the only way a Go template multiplies work
// without a loop (a chain of templates that each call the next twice
// doubles it per link), and loops are counted as they run.
func checkCalls(root *template.Template, lim jinja.Limits) error {
	g := callGraph{trees: map[string]*parse.Tree{}, max: int64(lim.MaxSteps),
		size: map[string]int64{}, depth: map[string]int{}}
	for _, d := range root.Templates() {
		if d.Tree != nil {
			g.trees[d.Name()] = d.Tree
		}
	}
	size, depth, err := g.visit(root.Name())
	switch {
	case err != nil:
		return err
	case size > g.max:
		return fmt.Errorf("%w: the template's {{ template }} calls expand it to more than %d steps", jinja.ErrLimit, lim.MaxSteps)
	case depth > lim.MaxDepth:
		return fmt.Errorf("%w: the template's {{ template }} calls nest deeper than %d", jinja.ErrLimit, lim.MaxDepth)
	}
	return nil
}

// callGraph measures templates by name, each once.
type callGraph struct {
	trees map[string]*parse.Tree
	max   int64            // sizes saturate at max+1
	size  map[string]int64 // nodes of a measured template, with the templates it calls
	depth map[string]int   // the longest chain of calls below a measured template
	open  []string         // the chain of calls being measured
}

func (g *callGraph) visit(name string) (size int64, depth int, err error) {
	if s, ok := g.size[name]; ok {
		return s, g.depth[name], nil
	}
	if i := slices.Index(g.open, name); i >= 0 {
		var chain []string
		for _, n := range append(g.open[i:], name) {
			chain = append(chain, strconv.Quote(n))
		}
		return 0, 0, fmt.Errorf("%w: template %q calls itself (%s): Go chat templates may not recurse",
			jinja.ErrLimit, name, strings.Join(chain, " → "))
	}
	tree := g.trees[name]
	if tree == nil {
		return 0, 0, nil // undefined: an error when it is called
	}
	g.open = append(g.open, name)
	defer func() { g.open = g.open[:len(g.open)-1] }()
	err = eachNode(tree.Root, func(n parse.Node) error {
		size = min(size+1, g.max+1)
		if call, ok := n.(*parse.TemplateNode); ok {
			s, d, err := g.visit(call.Name)
			if err != nil {
				return err
			}
			size, depth = min(size+s, g.max+1), max(depth, d+1)
		}
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	g.size[name], g.depth[name] = size, depth
	return size, depth, nil
}

// eachNode calls f on every node of l and of the lists inside it.
func eachNode(l *parse.ListNode, f func(parse.Node) error) error {
	if l == nil {
		return nil
	}
	for _, n := range l.Nodes {
		if err := f(n); err != nil {
			return err
		}
		var b *parse.BranchNode
		switch n := n.(type) {
		case *parse.IfNode:
			b = &n.BranchNode
		case *parse.WithNode:
			b = &n.BranchNode
		case *parse.RangeNode:
			b = &n.BranchNode
		default:
			continue
		}
		if err := eachNode(b.List, f); err != nil {
			return err
		}
		if err := eachNode(b.ElseList, f); err != nil {
			return err
		}
	}
	return nil
}

// addTicks puts an empty text node before every node of l that is not
// text, and first in l when l is a range body (loop), so that the output
// writer is called at every action and every iteration (budget.Write). The
// lists inside l get theirs too.
func addTicks(l *parse.ListNode, loop bool) {
	if l == nil {
		return
	}
	nodes := make([]parse.Node, 0, 2*len(l.Nodes)+1)
	if loop {
		nodes = append(nodes, tick())
	}
	for _, n := range l.Nodes {
		switch n := n.(type) {
		case *parse.TextNode:
			nodes = append(nodes, n)
			continue
		case *parse.IfNode:
			addTicks(n.List, false)
			addTicks(n.ElseList, false)
		case *parse.WithNode:
			addTicks(n.List, false)
			addTicks(n.ElseList, false)
		case *parse.RangeNode:
			addTicks(n.List, true)
			addTicks(n.ElseList, false)
		}
		nodes = append(nodes, tick(), n)
	}
	l.Nodes = nodes
}

func tick() *parse.TextNode { return &parse.TextNode{NodeType: parse.NodeText, Text: []byte{}} }
