package outbox

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// The rate budgets hold across a step of the system clock (NTP, a person
// setting it) because every time the outbox keeps comes from time.Now and
// keeps its monotonic reading: a bucket's refill and a Retry-After pause are
// measured on the monotonic clock, which no step moves, so a step back does
// not stall posting and a step forward does not refill a bucket (a burst
// past the platform's limit). A call that reads or builds wall time — from
// Unix seconds, a date, a time zone, or rounding, each of which drops the
// monotonic reading — would let a step in; none is allowed in the package.
func TestBudgetsKeepTheMonotonicClock(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	// Package-level functions of time that make a wall time, and methods
	// of time.Time that drop the monotonic reading or read the wall clock.
	wallFuncs := map[string]bool{"Unix": true, "UnixMilli": true, "UnixMicro": true, "Date": true, "Parse": true, "ParseInLocation": true}
	wallMethods := map[string]bool{"Round": true, "Truncate": true, "UTC": true, "Local": true, "In": true,
		"Unix": true, "UnixMilli": true, "UnixMicro": true, "UnixNano": true, "Date": true, "Clock": true}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "time" {
				if wallFuncs[sel.Sel.Name] {
					t.Errorf("%s: time.%s makes a wall time without the monotonic clock", fset.Position(call.Pos()), sel.Sel.Name)
				}
				return true
			}
			if wallMethods[sel.Sel.Name] && len(call.Args) <= 1 {
				t.Errorf("%s: .%s reads wall time or drops the monotonic reading", fset.Position(call.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
	if checked == 0 {
		t.Fatal("no source files checked")
	}
}
