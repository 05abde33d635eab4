package apps

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/format"
)

// checklistCase is one row of an app's checklist table: a file's bytes, the damage kind they
// are ("" for healthy), and a warning the verdict carries ("" for none at all).
type checklistCase struct {
	name, data, kind, warn string
}

// runChecklist judges each case in memory at pathOf(case) and streamed record by record (a
// file too large to hold): the same kind both ways (but where sameStream says the stream,
// which has no path, cannot tell), and the warnings.
func runChecklist(t *testing.T, p format.Profile, pathOf func(checklistCase) string, sameStream func(checklistCase) bool, cases []checklistCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := format.Inspect(p, format.File{Path: pathOf(tc)}, []byte(tc.data))
			if got := verdictKindOf(v); got != tc.kind {
				t.Fatalf("got %q (%s), want %q", got, v.Detail, tc.kind)
			}
			if tc.warn != "" && !strings.Contains(strings.Join(v.Warnings, "\n"), tc.warn) {
				t.Errorf("warnings %q lack %q", v.Warnings, tc.warn)
			}
			if tc.warn == "" && len(v.Warnings) > 0 {
				t.Errorf("unexpected warnings %q", v.Warnings)
			}
			if s := format.StreamLines(bufio.NewReader(strings.NewReader(tc.data)), p); verdictKindOf(s) != tc.kind && sameStream(tc) {
				t.Errorf("streamed: got %q (%s), want %q", verdictKindOf(s), s.Detail, tc.kind)
			}
		})
	}
}

func verdictKindOf(v format.Verdict) string {
	if v.Status == format.Healthy {
		return ""
	}
	return v.Kind
}

// runSalvage: each input's salvage at path is the wanted bytes, and judged healthy.
func runSalvage(t *testing.T, p format.Profile, path string, cases map[string]struct{ in, want string }) {
	t.Helper()
	for name, tc := range cases {
		out := format.KeepLines(p, path, []byte(tc.in))
		if string(out) != tc.want {
			t.Errorf("%s: salvage\n%s\nwant\n%s", name, out, tc.want)
			continue
		}
		if v := format.Inspect(p, format.File{Path: path}, out); v.Status != format.Healthy {
			t.Errorf("%s: salvaged file is %v", name, v)
		}
	}
}

// runSampleVerdicts: the session file at dir+<case>+file of each sample case is judged as
// the case's README says (a damage kind, "" for healthy).
func runSampleVerdicts(t *testing.T, p format.Profile, dir, file string, want map[string]string) {
	t.Helper()
	for c, kind := range want {
		path := dir + c + file
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if v := format.Inspect(p, format.File{Path: path}, data); verdictKindOf(v) != kind {
			t.Errorf("%s: %v, want %q", c, v, kind)
		}
	}
}
