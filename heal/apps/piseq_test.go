package apps

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// pi's sequence builds each record in an arena to the members it reads (piFields): it finds
// what it found on the record built to piDepth, record by record, at the end and in its
// warnings — over every pi sample's records and records with their members renamed, retyped,
// repeated or taken away.
func TestPiFieldsAreWhatPiReads(t *testing.T) {
	files := sampleRecords(piSamples, nodeDialect)
	if len(files) < 5 {
		t.Fatalf("%d sample files", len(files))
	}
	edits := [][2]string{
		{`"text":`, `"txt":`}, {`"message":`, `"mesage":`}, {`"id":`, `"idd":`}, {`"parentId":"`, `"parentId":1,"x":"`},
		{`"type":"text"`, `"type":"text","text":7`}, {`"version":3`, `"version":4`}, {`"content":[`, `"content":"s","c":[`},
		{`"type":"`, `"type":1,"t":"`}, {`"id":"`, `"id":"x`}, {`{`, `{"id":null,`}, {`"timestamp":`, `"timestamp":1,"ts":`},
	}
	rng := rand.New(rand.NewPCG(41, 43))
	compared := 0
	for _, recs := range files {
		for round := range 60 {
			old, cur := newPiSeq(""), newPiSeq("")
			for i, r := range recs {
				if round > 0 && rng.IntN(4) == 0 {
					e := edits[rng.IntN(len(edits))]
					r = bytes.Replace(r, []byte(e[0]), []byte(e[1]), 1)
				}
				if rng.IntN(20) == 0 && i > 0 {
					r = recs[rng.IntN(i)] // a repeated record
				}
				if jsonv.Valid(r, nodeDialect) != nil {
					continue
				}
				v, _ := jsonv.ParseDepth(r, nodeDialect, piDepth)
				want, got := old.add(v, r), cur.RecordValid(r)
				if want != got {
					t.Fatalf("record %q: built to depth %d %q, to its fields %q", r, piDepth, want, got)
				}
				compared++
				if want != "" {
					break // a pass ends at its first problem
				}
			}
			if a, b := old.End(), cur.End(); a != b || strings.Join(old.Warnings(), "|") != strings.Join(cur.Warnings(), "|") {
				t.Fatalf("end %q / %q, warnings %q / %q", a, b, old.Warnings(), cur.Warnings())
			}
		}
	}
	t.Logf("%d records compared", compared)
}

// sampleRecords are the valid records of each JSONL sample file under dir, file by file
// (files without one left out).
func sampleRecords(dir string, d jsonv.Dialect) [][][]byte {
	var files [][][]byte
	filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if b, rerr := os.ReadFile(p); err == nil && rerr == nil && strings.HasSuffix(p, ".jsonl") {
			var recs [][]byte
			for _, l := range bytes.Split(b, []byte("\n")) {
				if jsonv.Valid(l, d) == nil && len(bytes.TrimSpace(l)) > 0 {
					recs = append(recs, l)
				}
			}
			if len(recs) > 0 {
				files = append(files, recs)
			}
		}
		return nil
	})
	return files
}
