package heal

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocumentValueJudgedInItsPass: a big app document with another write's bytes after it
// has its first value judged, and its sums taken, beside the inspection's pass, and is
// healed as when they are judged and taken in passes of their own after it: the same
// report, bytes, quarantined bytes and manifest sums, for every sample document of CoPaw and
// PraisonAI with trailing bytes of several shapes.
func TestDocumentValueJudgedInItsPass(t *testing.T) {
	inPass, n := 0, 0
	for _, app := range []string{"copaw", "praisonai"} {
		err := filepath.WalkDir(filepath.Join("testdata/samples", app), func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() || !strings.HasSuffix(path, ".json") {
				return err
			}
			orig, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			rel := filepath.Join("sessions", filepath.Base(path))
			for _, tail := range []string{"", `ion-2"}]}}` + "\n", "\n}\n", " x", `, "k": 1}`} {
				data := append(bytes.Clone(orig), tail...)
				var got [2]struct {
					r        Report
					after, q []byte
					sums     string
				}
				judged := false
				for i, twoPass := range []bool{true, false} {
					e, root := bigEngine(t, 1)
					e.docTwoPass = twoPass
					e.onStep = func(s, _ string) { judged = judged || s == "value-judged-in-pass" }
					p := filepath.Join(root, rel)
					os.MkdirAll(filepath.Dir(p), 0o755)
					if err := os.WriteFile(p, data, 0o600); err != nil {
						t.Fatal(err)
					}
					r := e.Heal(context.Background(), Target{Path: p, Rule: appRule(t, app, root)}, false)
					after, q := healedBytes(t, e, p)
					r.Quarantine, r.Wrote, r.Path = "", nil, ""
					got[i].r, got[i].after, got[i].q = r, after, q
					if ms, _ := e.Quarantine.List(); len(ms) == 1 {
						got[i].sums = ms[0].SHA256 + " " + ms[0].NewSHA256
					}
					if twoPass && judged {
						t.Fatalf("%s: judged in the inspection's pass with docTwoPass", path)
					}
				}
				if !equalReports(got[0].r, got[1].r) || !bytes.Equal(got[0].after, got[1].after) || !bytes.Equal(got[0].q, got[1].q) || got[0].sums != got[1].sums {
					t.Fatalf("%s + %q:\npasses of their own %+v (sums %s)\nin the inspection's %+v (sums %s)", path, tail, got[0].r, got[0].sums, got[1].r, got[1].sums)
				}
				if judged {
					inPass++
				}
				n++
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d documents, %d first values judged in the inspection's pass", n, inPass)
	if inPass < 20 {
		t.Fatalf("only %d of %d first values judged in the inspection's pass", inPass, n)
	}
}
