package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEveryCommandWritesItsResultThroughRenderOutput keeps one output path (CONTRIBUTING.md,
// "Output"): no command encodes JSON itself (render.JSON) or branches on the format it was asked
// for ("json", "csv", "table"); each hands render.Output a View.
func TestEveryCommandWritesItsResultThroughRenderOutput(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	var found []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok && id.Name == "render" && n.Sel.Name == "JSON" {
					found = append(found, fset.Position(n.Pos()).String()+": render.JSON (use render.Output)")
				}
			case *ast.BinaryExpr:
				if (n.Op == token.EQL || n.Op == token.NEQ) && (isFormatName(n.X) || isFormatName(n.Y)) {
					found = append(found, fset.Position(n.Pos()).String()+": compares a format (use render.Output)")
				}
			case *ast.CaseClause:
				for _, e := range n.List {
					if isFormatName(e) {
						found = append(found, fset.Position(n.Pos()).String()+": a case of a format (use render.Output)")
					}
				}
			}
			return true
		})
	}
	assert.Empty(t, found, "a command writes its result through render.Output")
}

// isFormatName says whether e is the name of an output format: "json", "csv", "table", or
// render's constants for them.
func isFormatName(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.BasicLit:
		s, err := strconv.Unquote(e.Value)
		return e.Kind == token.STRING && err == nil && (s == "json" || s == "csv" || s == "table")
	case *ast.SelectorExpr:
		id, ok := e.X.(*ast.Ident)
		return ok && id.Name == "render" && strings.HasPrefix(e.Sel.Name, "Format")
	}
	return false
}
