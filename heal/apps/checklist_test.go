package apps

import (
	"bufio"
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
