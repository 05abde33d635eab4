package heal

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// lost_records and lost_bytes say what the user loses, not how the damaged file differs: a
// restore that gives back every record reports nothing lost, a byte order mark is no record,
// and a dropped line that held two glued records loses two.
func TestLossIsWhatTheUserLoses(t *testing.T) {
	const file = "home/.claude/projects/-tmp-demo-proj/7c2e1b4a-9d3f-4e8a-b6c1-2f5a8d9e0b13.jsonl"
	var root string
	// setup copies the healthy tree; with lastGood, the engine has taken its last-good copies.
	setup := func(t *testing.T, lastGood bool) (*Engine, string, []byte) {
		root = filepath.Join(t.TempDir(), "case")
		copyTree(t, filepath.Join(samples, "claude-code/healthy"), root)
		e := testEngine(t, "claude-code", root)
		path := filepath.Join(root, file)
		if lastGood {
			for _, r := range runAll(t, e, true) {
				if r.Verdict != Healthy {
					t.Fatalf("%s: %s %s", r.Path, r.Verdict, r.Detail)
				}
			}
		}
		return e, path, read(t, path)
	}
	lines := func(b []byte) [][]byte { return bytes.SplitAfter(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) }
	heal := func(t *testing.T, e *Engine, path string, damaged []byte) Report {
		t.Helper()
		if err := os.WriteFile(path, damaged, 0o644); err != nil {
			t.Fatal(err)
		}
		r := reportsByFile(t, root, runAll(t, e, true))[file]
		if r.Action != ActionHealed {
			t.Fatalf("%s: %s %s", r.Kind, r.Action, r.Reason)
		}
		return r
	}

	t.Run("restore of every record", func(t *testing.T) {
		// A byte of a middle record is flipped: the app skips that line; the last-good
		// copy, byte for byte the file before, holds its whole version.
		e, path, want := setup(t, true)
		ls := lines(want)
		damaged := bytes.Clone(want)
		at := len(bytes.Join(ls[:2], nil)) + len(ls[2])/2
		damaged[at] = '\x01'
		r := heal(t, e, path, damaged)
		if got := read(t, path); !bytes.Equal(got, want) {
			t.Fatalf("%s did not restore the file", r.Strategy)
		}
		if r.LostRecords != 0 || r.LostBytes != 0 {
			t.Errorf("%s restored every record, reports %d records, %d bytes lost", r.Strategy, r.LostRecords, r.LostBytes)
		}
	})
	t.Run("byte order mark", func(t *testing.T) {
		e, path, want := setup(t, true)
		r := heal(t, e, path, append([]byte("\xef\xbb\xbf"), want...))
		if got := read(t, path); !bytes.Equal(got, want) {
			t.Fatalf("%s: not the file without its mark", r.Strategy)
		}
		if r.LostRecords != 0 || r.LostBytes != 0 {
			t.Errorf("%s: a byte order mark stripped reports %d records, %d bytes lost", r.Strategy, r.LostRecords, r.LostBytes)
		}
	})
	t.Run("two glued records dropped", func(t *testing.T) {
		// The last two records glued without their '\n' and a byte of each spoilt, so no
		// split finds them: the salvage drops the line, and both records with it.
		e, path, want := setup(t, false) // no copy to restore
		ls := lines(want)
		n := len(ls)
		glued := append(bytes.TrimSuffix(bytes.Clone(ls[n-2]), []byte("\n")), ls[n-1]...)
		glued[len(ls[n-2])/2], glued[len(ls[n-2])+len(ls[n-1])/2] = '\x01', '\x01'
		damaged := append(bytes.Join(ls[:n-2], nil), glued...)
		r := heal(t, e, path, damaged)
		if r.Strategy != "salvage" || r.LostRecords != 2 || r.LostBytes != int64(len(glued)) {
			t.Errorf("%s: reports %d records, %d bytes lost; want 2 records, %d bytes", r.Strategy, r.LostRecords, r.LostBytes, len(glued))
		}
	})
	t.Run("glued stubs", func(t *testing.T) {
		// A record's line starts with the torn first try at it, with the torn start of a
		// record nobody wrote again, or with garbage: the split keeps the record; the
		// first try loses nothing, the other torn start one record, garbage its bytes.
		for _, tc := range []struct {
			name    string
			stub    func(ls [][]byte) []byte
			records int
		}{
			{"first try", func(ls [][]byte) []byte { return ls[3][:len(ls[3])/2] }, 0},
			{"another record's start", func(ls [][]byte) []byte {
				return append([]byte(`{"parentUuid":"no-such-record","isSidechain":false,`), ls[3][len(`{"parentUuid":`)+40:len(ls[3])/2]...)
			}, 1},
			{"garbage", func([][]byte) []byte { return []byte("zz\x01 not a record") }, 0},
		} {
			t.Run(tc.name, func(t *testing.T) {
				e, path, want := setup(t, false)
				ls := lines(want)
				if !bytes.HasPrefix(ls[3], []byte(`{"parentUuid":`)) {
					t.Fatalf("line 4 is not a chain record: %.60s", ls[3])
				}
				stub := tc.stub(ls)
				damaged := append(bytes.Join(ls[:3], nil), stub...)
				damaged = append(damaged, bytes.Join(ls[3:], nil)...)
				r := heal(t, e, path, damaged)
				if got := read(t, path); !bytes.Equal(got, want) {
					t.Fatalf("%s: not the file without its stub", r.Strategy)
				}
				wantBytes := int64(len(stub))
				if tc.name == "first try" {
					wantBytes = 0
				}
				if r.LostRecords != tc.records || r.LostBytes != wantBytes {
					t.Errorf("%s: reports %d records, %d bytes lost; want %d, %d", r.Strategy, r.LostRecords, r.LostBytes, tc.records, wantBytes)
				}
			})
		}
	})
	t.Run("torn tail", func(t *testing.T) {
		e, path, want := setup(t, false)
		ls := lines(want)
		last := ls[len(ls)-1]
		damaged := append(bytes.Join(ls[:len(ls)-1], nil), last[:len(last)/2]...)
		r := heal(t, e, path, damaged)
		if r.Strategy != "salvage" || r.LostRecords != 1 || r.LostBytes != int64(len(last)/2) {
			t.Errorf("%s: reports %d records, %d bytes lost; want the torn record, %d bytes", r.Strategy, r.LostRecords, r.LostBytes, len(last)/2)
		}
	})
}
