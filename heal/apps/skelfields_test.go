package apps

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// An app that tells what its checks read of a record (format.SkeletonFielder) has a long
// record whose skeletons are over the bound judged from the skeleton of that alone
// (jsonv.FieldsSkeleton): each of its checks must say of that skeleton what it says of the
// record — the record checklist, the sequence record by record and at its end, whether a
// record is whole, superseded, may be appended, and its key. Every record of every sample of the app, and
// each again holding a member of many short lines (a tool's output, as a long record of
// Claude Code's keeps it), is judged both ways.
func TestSkeletonFieldersReadNoMore(t *testing.T) {
	fielders, records := 0, 0
	for _, p := range Registry().Profiles() {
		sf, ok := p.(format.SkeletonFielder)
		if !ok {
			continue
		}
		fielders++
		var files []string
		// openclaw's and openviking's samples hold their transcripts and messages
		dir := strings.TrimSuffix(strings.TrimSuffix(p.Name(), "-transcript"), "-messages")
		filepath.WalkDir(filepath.Join("../testdata/samples", dir), func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() && strings.HasSuffix(path, ".jsonl") {
				files = append(files, path)
			}
			return nil
		})
		if len(files) == 0 {
			t.Fatalf("%s: no sample", p.Name())
		}
		for _, path := range files {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, withLines := range []bool{false, true} {
				var recs, skels [][]byte
				for _, l := range bytes.Split(data, []byte("\n")) {
					if withLines {
						l = withPatchLines(l)
					}
					sk := l
					if jsonv.Valid(l, p.Dialect()) == nil {
						if sk, err = jsonv.FieldsSkeleton(bytes.NewReader(l), p.Dialect(), sf.SkeletonFields(), format.SkeletonShort, format.MaxLine); err != nil {
							t.Fatal(err)
						}
						records++
					}
					recs, skels = append(recs, l), append(skels, sk)
				}
				if msg := sameChecks(p, path, recs, skels); msg != "" {
					t.Fatalf("%s (%s, lines added: %v): %s", p.Name(), path, withLines, msg)
				}
			}
		}
	}
	if fielders == 0 || records < 100 {
		t.Fatalf("%d apps tell what their checks read, %d records judged from that", fielders, records)
	}
}

// withPatchLines is the record l with a member of 50 short lines put last.
func withPatchLines(l []byte) []byte {
	body := bytes.TrimRight(l, "\r")
	if !bytes.HasPrefix(body, []byte("{")) || !bytes.HasSuffix(body, []byte("}")) || len(body) < 3 {
		return l
	}
	var b bytes.Buffer
	b.Write(body[:len(body)-1])
	b.WriteString(`,"structuredPatch":[{"lines":[`)
	for i := range 50 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"+ line %d"`, i)
	}
	b.WriteString(`]}]}`)
	return append(b.Bytes(), l[len(body):]...)
}

// sameChecks: what p's checks say of the records recs of the file at path, and of skels
// (each record's skeleton, or the line itself where it is not a valid value), is the same;
// else what differs.
func sameChecks(p format.Profile, path string, recs, skels [][]byte) string {
	parse := func(b []byte) *jsonv.Value {
		v, err := jsonv.Parse(b, p.Dialect())
		if err != nil {
			return nil
		}
		return v
	}
	var seqR, seqS format.Sequence
	if sc, ok := p.(format.SequenceChecker); ok {
		seqR, seqS = sc.NewSequence(path), sc.NewSequence(path)
	}
	for i, rec := range recs {
		sk := skels[i]
		if rc, ok := p.(format.RecordChecker); ok {
			for _, first := range []bool{false, true} {
				if a, b := rc.RecordProblem(rec, first), rc.RecordProblem(sk, first); a != b {
					return fmt.Sprintf("record %q: %q, of its skeleton %q: %q", rec, a, sk, b)
				}
			}
			if a, b := rc.AppendedOK(rec), rc.AppendedOK(sk); a != b {
				return fmt.Sprintf("record %q appended: %v, its skeleton %q: %v", rec, a, sk, b)
			}
		}
		if seqR != nil {
			if a, b := seqR.Record(rec), seqS.Record(sk); a != b {
				return fmt.Sprintf("the sequence at record %q: %q, of its skeleton %q: %q", rec, a, sk, b)
			}
		}
		vr, vs := parse(rec), parse(sk)
		if vr == nil || vr.Type != jsonv.Object {
			continue
		}
		if sp, ok := p.(format.Splitter); ok {
			if a, b := sp.Whole(vr), sp.Whole(vs); a != b {
				return fmt.Sprintf("record %q whole: %v, its skeleton %q: %v", rec, a, sk, b)
			}
		}
		if ss, ok := p.(format.Superseder); ok {
			if gone := ss.Superseded(path); gone != nil && gone(vr) != gone(vs) {
				return fmt.Sprintf("record %q superseded: %v, its skeleton %q: %v", rec, gone(vr), sk, gone(vs))
			}
		}
		if rk, ok := p.(format.RecordKeyer); ok {
			if a, b := rk.RecordKey(vr), rk.RecordKey(vs); a != b {
				return fmt.Sprintf("record %q key: %q, its skeleton %q: %q", rec, a, sk, b)
			}
		}
	}
	if seqR != nil {
		if a, b := seqR.End(), seqS.End(); a != b {
			return fmt.Sprintf("the sequence's end: %q, of the skeletons: %q", a, b)
		}
		if w, ok := seqR.(format.SequenceWarner); ok {
			if a, b := strings.Join(w.Warnings(), "|"), strings.Join(seqS.(format.SequenceWarner).Warnings(), "|"); a != b {
				return fmt.Sprintf("the sequence's warnings: %q, of the skeletons: %q", a, b)
			}
		}
	}
	return ""
}
