package storage_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/storage"
)

// parsePackage parses this package's non-test files, with comments.
func parsePackage(t *testing.T) (*token.FileSet, []*ast.File) {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		t.Fatal("no files of package storage")
	}
	return fset, files
}

// The contract lives on the interface: every method of Store, in whichever
// of the interfaces it embeds, has its doc comment there.
func TestEveryStoreMethodIsDocumentedOnTheInterface(t *testing.T) {
	fset, files := parsePackage(t)
	documented := map[string]bool{}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			it, ok := n.(*ast.InterfaceType)
			if !ok {
				return true
			}
			for _, m := range it.Methods.List {
				if len(m.Names) == 0 {
					continue // an embedded interface
				}
				name := m.Names[0].Name
				if m.Doc == nil || !strings.HasPrefix(strings.TrimSpace(m.Doc.Text()), name+" ") {
					t.Errorf("%s: method %s has no doc comment starting with its name", fset.Position(m.Pos()), name)
					continue
				}
				documented[name] = true
			}
			return true
		})
	}
	st := reflect.TypeFor[storage.Store]()
	for i := range st.NumMethod() {
		if name := st.Method(i).Name; !documented[name] {
			t.Errorf("Store.%s is not documented on an interface of package storage", name)
		}
	}
}

// Package storage states the contract and holds no backend: it does not
// import the agent (whose interfaces the consumers declare) nor a database
// driver.
func TestStorageImportsNeitherAgentNorADriver(t *testing.T) {
	fset, files := parsePackage(t)
	for _, f := range files {
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p == "github.com/threadsmith/threadsmith/agent" || p == "database/sql" ||
				strings.HasPrefix(p, "modernc.org/") || strings.HasPrefix(p, "github.com/jackc/") {
				t.Errorf("%s: package storage imports %s", fset.Position(imp.Pos()), p)
			}
		}
	}
}
