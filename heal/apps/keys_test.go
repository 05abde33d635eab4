package apps

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// A profile that names what its RecordKey reads (format.RecordKeyFielder) gets the same key
// from that tree, built in one arena reused line after line, as from the record's whole tree:
// over every line of every JSONL sample and of the fuzz corpus, and over records whose key
// members are of every type, repeated or missing.
func TestRecordKeyFieldsAreWhatRecordKeyReads(t *testing.T) {
	lines := [][]byte{
		[]byte(`{"id":"a","type":"message"}`), []byte(`{"id":"a","type":"session"}`), []byte(`{"type":"session"}`),
		[]byte(`{"id":1,"type":"session"}`), []byte(`{"id":{"x":"y"},"type":["session"]}`), []byte(`{"id":"a","id":"b"}`),
		[]byte(`{"id":"","type":"message"}`), []byte(`{"_type":"metadata","key":"k"}`), []byte(`{"_type":"metadata","_type":"x"}`),
		[]byte(`{"_type":{"a":1}}`), []byte(`{"id":"\u00e9\ud83d\ude00","type":"m\u0065ssage"}`), []byte(`[]`), []byte(`"s"`),
	}
	root := "../../../shared/formats/samples"
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".jsonl") {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return nil
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 8<<20)
		for sc.Scan() {
			lines = append(lines, bytes.Clone(sc.Bytes()))
		}
		return nil
	})
	if len(lines) < 100 {
		t.Fatalf("only %d lines read: the samples are not at %s", len(lines), root)
	}
	n := 0
	for _, p := range Registry().Profiles() {
		kf, ok := p.(format.RecordKeyFielder)
		if !ok {
			continue
		}
		n++
		var a jsonv.Arena
		for _, line := range lines {
			whole, err := jsonv.Parse(line, p.Dialect())
			if err != nil {
				continue
			}
			got := kf.RecordKey(a.ParseFieldsValid(line, p.Dialect(), kf.RecordKeyFields()))
			if want := kf.RecordKey(whole); got != want {
				t.Fatalf("%s: key %q from the fields, %q from the whole record %s", p.Name(), got, want, line)
			}
		}
	}
	if n < 5 {
		t.Fatalf("%d profiles name their key's fields, want the 5 keyed ones", n)
	}
}
