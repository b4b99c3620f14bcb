package envconfig

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// envCalls are the os functions that read or write the process
// environment.
var envCalls = map[string]bool{"Getenv": true, "LookupEnv": true, "Setenv": true, "Unsetenv": true,
	"Environ": true, "Clearenv": true, "ExpandEnv": true}

// TestOnlyThisPackageReadsTheEnvironment: outside test files, no package of
// the module but this one touches the environment, so that every setting is
// in the table and the libraries take options. internal/fixtures, the tests'
// helper (CI, FOLIO_SHARED), is compiled into no program.
func TestOnlyThisPackageReadsTheEnvironment(t *testing.T) {
	root := filepath.Join("..", "..")
	allowed := map[string]bool{"internal/envconfig": true, "internal/fixtures": true}
	fset := token.NewFileSet()
	var found []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || allowed[rel]) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		osName := ""
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "os" {
				osName = "os"
				if imp.Name != nil {
					osName = imp.Name.Name
				}
			}
		}
		if osName == "" {
			return nil
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == osName && envCalls[sel.Sel.Name] {
					found = append(found, fset.Position(sel.Pos()).String()+": os."+sel.Sel.Name)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("%s: read settings through internal/envconfig in cmd and pass them to the library as options", f)
	}
}

func TestGetRefusesASettingNotInTheTable(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Get of a name not in the table did not panic")
		}
	}()
	Get("FOLIO_NO_SUCH_SETTING")
}

func TestAsMapGivesDefaults(t *testing.T) {
	t.Setenv("FOLIO_KEEP_ALIVE", "")
	t.Setenv("FOLIO_MAX_QUEUE", "7")
	m := AsMap()
	if m["FOLIO_KEEP_ALIVE"] != "5m" || m["FOLIO_MAX_QUEUE"] != "7" || len(m) != len(Settings) {
		t.Errorf("%v", m)
	}
}
