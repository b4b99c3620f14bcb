package cmd

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"testing"
)

// TestNoInit: the command tree is built by NewRoot alone, so that no
// command depends on the order in which files' init functions run.
func TestNoInit(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, obj := range f.Decls {
			if fd, ok := obj.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == "init" {
				t.Errorf("%s: func init: build the command in a constructor that NewRoot calls", fset.Position(fd.Pos()))
			}
		}
	}
}

// TestNewRootTrees: two trees share no flag values, so a flag one run set
// does not leak into the next.
func TestNewRootTrees(t *testing.T) {
	a, b := NewRoot(), NewRoot()
	bench, _, err := a.Find([]string{"bench"})
	if err != nil {
		t.Fatal(err)
	}
	if err := bench.Flags().Set("prompt", "7"); err != nil {
		t.Fatal(err)
	}
	other, _, err := b.Find([]string{"bench"})
	if err != nil {
		t.Fatal(err)
	}
	if got := other.Flags().Lookup("prompt").Value.String(); got != "512" {
		t.Errorf("a second tree's bench --prompt is %s after the first's was set to 7, want its default 512", got)
	}
	for _, path := range [][]string{{"bench", "restart"}, {"bench", "serve"}, {"gpu", "selftest"}, {"dev", "synth"}, {"serve"}} {
		if c, _, err := a.Find(path); err != nil || c.Name() != path[len(path)-1] {
			t.Errorf("%v: %v, %v", path, c, err)
		}
	}
	if f := bench.Flags().Lookup("gpu"); f == nil {
		t.Error("bench has no --gpu")
	}
}
