package apps

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/format"
)

// kindConsts maps the names of heal/format's kind constants to their values, read from its
// source.
func kindConsts(t *testing.T) map[string]string {
	t.Helper()
	files, _ := filepath.Glob("../format/*.go")
	out := map[string]string{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && strings.HasPrefix(n.Name, "Kind") && lit.Kind == token.STRING {
						out[n.Name], _ = strconv.Unquote(lit.Value)
					}
				}
			}
		}
	}
	return out
}

// verdictKinds is, per file of dir (its base name), the kinds whose constants it uses to make
// a verdict (qual is how it names heal/format: "format." here, "" in heal/format itself): any
// use but one inside a string concatenation (a warning's text). types is the types each file
// declares.
func verdictKinds(t *testing.T, dir, qual string, consts map[string]string) (kinds map[string][]string, types map[string][]string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	kinds, types = map[string][]string{}, map[string][]string{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		base := filepath.Base(f)
		var stack []ast.Node
		ast.Inspect(af, func(n ast.Node) bool {
			if n == nil {
				stack = stack[:len(stack)-1]
				return true
			}
			var parent ast.Node
			if len(stack) > 0 {
				parent = stack[len(stack)-1]
			}
			stack = append(stack, n)
			if ts, ok := n.(*ast.TypeSpec); ok {
				types[base] = append(types[base], ts.Name.Name)
			}
			name := ""
			switch x := n.(type) {
			case *ast.SelectorExpr:
				if id, ok := x.X.(*ast.Ident); ok && qual != "" && id.Name+"." == qual {
					name = x.Sel.Name
				}
			case *ast.Ident:
				if qual == "" {
					if _, isSel := parent.(*ast.SelectorExpr); !isSel {
						name = x.Name
					}
				}
			}
			v, ok := consts[name]
			if !ok {
				return true
			}
			if b, ok := parent.(*ast.BinaryExpr); ok && b.Op == token.ADD {
				return true // text: a warning that names the kind
			}
			if _, ok := parent.(*ast.ValueSpec); ok && qual == "" {
				return true // the constant's own declaration
			}
			if !slices.Contains(kinds[base], v) {
				kinds[base] = append(kinds[base], v)
			}
			return true
		})
	}
	return kinds, types
}

// TestKindsCoverTheCode ties format.Kinds to the code, so that the series the daemon starts
// at 0 for a rule cannot drift from what its verdicts can name: every kind an app's file
// makes a verdict of is among the kinds of a profile that file declares, and every kind the
// generic validation makes a verdict of is among the kinds of some registered profile.
func TestKindsCoverTheCode(t *testing.T) {
	consts := kindConsts(t)
	for _, k := range format.AllKinds() {
		if !slices.Contains(mapValues(consts), k) {
			t.Errorf("format.AllKinds lists %q, no constant", k)
		}
	}
	for name, v := range consts {
		if !slices.Contains(format.AllKinds(), v) {
			t.Errorf("format.%s (%q) is not in format.AllKinds", name, v)
		}
	}

	r := Registry()
	declared := map[string][]string{} // type name → its kinds
	var all []string
	for _, p := range r.Profiles() {
		declared[reflect.TypeOf(p).Name()] = format.Kinds(p)
		all = append(all, format.Kinds(p)...)
	}
	uses, types := verdictKinds(t, ".", "format.", consts)
	for file, ks := range uses {
		var own []string
		for _, typ := range types[file] {
			own = append(own, declared[typ]...)
		}
		if own == nil {
			t.Errorf("%s makes verdicts of %v but declares no registered profile: say in its profile's OwnKinds which", file, ks)
			continue
		}
		for _, k := range ks {
			if !slices.Contains(own, k) {
				t.Errorf("%s makes verdicts of kind %q, which no profile it declares lists (add it to OwnKinds)", file, k)
			}
		}
	}
	generic, _ := verdictKinds(t, "../format", "", consts)
	for file, ks := range generic {
		if file == "kinds.go" {
			continue
		}
		for _, k := range ks {
			if !slices.Contains(all, k) {
				t.Errorf("heal/format's %s makes verdicts of kind %q, which format.Kinds gives no profile", file, k)
			}
		}
	}
}

// Each app's format can name only its own kinds: none a JSONL log cannot have (a trailing
// value, a JSON syntax error) for the coding CLIs' logs, and none an app's checklist never
// reports.
func TestKindsOfAFormat(t *testing.T) {
	r := Registry()
	for _, tc := range []struct {
		format     string
		has, hasnt []string
	}{
		{"claude-code", []string{format.KindMalformedRecord, format.KindTruncated, format.KindSchema, format.KindEmpty, format.KindBOM},
			[]string{format.KindSyntax, format.KindTrailingGarbage, format.KindMissing, format.KindStaleLiveRecords, format.KindDanglingReference, format.KindDuplicateRecord}},
		{"copaw", []string{format.KindSyntax, format.KindTrailingGarbage, format.KindNotObject, format.KindSchema},
			[]string{format.KindMalformedRecord, format.KindMissing, format.KindMetadataLag}},
		{"openclaw", []string{format.KindMissing, format.KindWipedPlaceholder, format.KindMalformedRecord, format.KindSyntax},
			[]string{format.KindStaleLiveRecords, format.KindDuplicateRecord}},
		{"jsonl", []string{format.KindMalformedRecord, format.KindTruncated},
			[]string{format.KindSchema, format.KindSyntax, format.KindEmpty}},
	} {
		ks := r.Kinds(tc.format)
		for _, k := range tc.has {
			if !slices.Contains(ks, k) {
				t.Errorf("%s: kinds %v lack %q", tc.format, ks, k)
			}
		}
		for _, k := range tc.hasnt {
			if slices.Contains(ks, k) {
				t.Errorf("%s: kinds %v have %q", tc.format, ks, k)
			}
		}
	}
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
