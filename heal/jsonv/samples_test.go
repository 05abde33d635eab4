package jsonv

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const samplesDir = "../testdata/samples"

// sampleFiles returns the *.json and *.jsonl files under the samples directory, keyed by their
// slash-separated path relative to it.
func sampleFiles(tb testing.TB) map[string][]byte {
	tb.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(samplesDir, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if de.IsDir() || !(strings.HasSuffix(p, ".json") || strings.HasSuffix(p, ".jsonl")) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(samplesDir, p)
		files[filepath.ToSlash(rel)] = b
		return nil
	})
	if err != nil {
		tb.Fatalf("reading samples: %v", err)
	}
	return files
}

// TestHealthySamples checks that every file of every healthy case, written by the apps' own
// save code, is accepted: JSON files whole, JSONL files line by line.
func TestHealthySamples(t *testing.T) {
	n := 0
	for rel, b := range sampleFiles(t) {
		if !strings.Contains(rel, "healthy") {
			continue
		}
		n++
		if strings.HasSuffix(rel, ".json") {
			if err := Valid(b, plain); err != nil {
				t.Errorf("%s: %v", rel, err)
			}
			if _, err := Parse(b, plain); err != nil {
				t.Errorf("%s: Parse: %v", rel, err)
			}
			continue
		}
		Lines(b, func(start int, line []byte, terminated bool) bool {
			if err := Valid(line, plain); err != nil {
				t.Errorf("%s: line at %d: %v", rel, start, err)
			}
			if !terminated {
				t.Errorf("%s: last line not terminated", rel)
			}
			return true
		})
	}
	if n == 0 {
		t.Fatal("no healthy samples found")
	}
}

// TestDamagedSamples pins the verdicts on the damaged JSON samples.
func TestDamagedSamples(t *testing.T) {
	files := sampleFiles(t)
	for _, c := range []struct {
		rel  string
		kind ErrKind
		off  int64 // -1 for len(file)
	}{
		{"copaw/corrupt_extra_data_race/sessions/console/default_console--default.json", ErrTrailing, 1145},
		{"copaw/corrupt_truncated/sessions/console/default_console--default.json", ErrTruncated, 756},
		{"copaw/corrupt_empty/sessions/console/default_console--default.json", ErrTruncated, 0},
		{"openclaw/02-truncated/state/agents/main/sessions/sessions.json", ErrTruncated, -1},
		{"openclaw/07-nul-filled/state/agents/main/sessions/sessions.json", ErrSyntax, 0},
		{"openclaw/12-utf8-bom/state/agents/main/sessions/sessions.json", ErrSyntax, 0},
		{"openclaw/13-json5-comment-trailing-comma/state/agents/main/sessions/sessions.json", ErrSyntax, 4},
	} {
		b, ok := files[c.rel]
		if !ok {
			t.Errorf("%s: missing", c.rel)
			continue
		}
		off := c.off
		if off < 0 {
			off = int64(len(b))
		}
		var e *Error
		if err := Valid(b, plain); !errors.As(err, &e) || e.Kind != c.kind || e.Offset != off {
			t.Errorf("%s: Valid = %v, want %s at %d", c.rel, err, c.kind, off)
		}
	}
	// The race leaves a complete first value: FirstValue finds where it ends.
	b := files["copaw/corrupt_extra_data_race/sessions/console/default_console--default.json"]
	healthy := files["copaw/healthy/sessions/console/default_console--default.json"]
	if end, err := FirstValue(b, plain); err != nil || string(b[:end]) != strings.TrimRight(string(healthy), " \t\r\n") {
		t.Errorf("FirstValue on the race sample = %d, %v; want the healthy file", end, err)
	}
}
