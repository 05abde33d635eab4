package format

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// seqProfile is a record checklist whose sequence spans records: the first record must not
// hold "h" false, a record's "i" must not go back, and one holding "dup" is a duplicate; its
// warnings count the records and the gaps. It reads batches.
type seqProfile struct{ plain }

func (seqProfile) RecordProblem(rec []byte, first bool) string { return "" }
func (seqProfile) NoRecords() Verdict                          { return Damage(KindEmpty, 0, "no records") }
func (seqProfile) AppendedOK([]byte) bool                      { return true }
func (seqProfile) NewSequence(string) Sequence                 { return &testSeq{prev: -1} }

type testSeq struct {
	keyed    bool // its batches are given keys
	n, gaps  int
	prev     int64
	dupKind  bool
	lastEven bool
}

// testRec is what a batch reads of a record.
type testRec struct {
	err      string
	hasI     bool
	i        int64
	noHeader bool
	dup      bool
}

func readTestRec(rec []byte, valid bool) testRec {
	if !valid {
		if err := jsonv.Valid(rec, jsonv.Dialect{}); err != nil {
			return testRec{err: err.Error()}
		}
	}
	v, _ := jsonv.Parse(rec, jsonv.Dialect{})
	r := testRec{dup: v.Get("dup") != nil}
	if h := v.Get("h"); h != nil && h.Type == jsonv.Bool && !h.Bool {
		r.noHeader = true
	}
	if i := v.Get("i"); i != nil && i.IsInt {
		r.hasI, r.i = true, i.Int
	}
	return r
}

func (s *testSeq) apply(r testRec) string {
	s.dupKind = false
	if r.err != "" {
		return r.err
	}
	if s.n == 0 && r.noHeader {
		return "no header"
	}
	s.n++
	if r.dup {
		s.dupKind = true
		return "a duplicate"
	}
	if r.hasI {
		if r.i < s.prev {
			return fmt.Sprintf("i %d after %d", r.i, s.prev)
		}
		if s.prev >= 0 && r.i > s.prev+1 {
			s.gaps++
		}
		s.prev = r.i
		s.lastEven = r.i%2 == 0
	}
	return ""
}

func (s *testSeq) Record(rec []byte) string      { return s.apply(readTestRec(rec, false)) }
func (s *testSeq) RecordValid(rec []byte) string { return s.apply(readTestRec(rec, true)) }
func (s *testSeq) ChecksRecords()                {}
func (s *testSeq) End() string {
	if s.n > 0 && !s.lastEven {
		return "the last i is odd"
	}
	return ""
}
func (s *testSeq) Warnings() []string {
	return []string{fmt.Sprintf("%d records, %d gaps", s.n, s.gaps)}
}
func (s *testSeq) ProblemKind() string {
	if s.dupKind {
		return KindDuplicateRecord
	}
	return ""
}

type testBatch struct{ recs []testRec }

// testKeyedBatch is a testBatch that is given the keys of valid records.
type testKeyedBatch struct {
	testBatch
	bad string // keys not where the record's members begin
}

func (b *testKeyedBatch) AddKeyed(rec []byte, keys []int32) {
	v, _ := jsonv.Parse(rec, jsonv.Dialect{})
	var want []int32
	for _, m := range v.Keys {
		want = append(want, int32(m.KeyStart))
	}
	if fmt.Sprint(keys) != fmt.Sprint(want) && b.bad == "" {
		b.bad = fmt.Sprintf("%q: keys %v, want %v", rec, keys, want)
	}
	b.Add(rec, true)
}

func (s *testSeq) NewBatch() RecordBatch {
	if s.keyed {
		return &testKeyedBatch{}
	}
	return &testBatch{}
}
func (s *testSeq) ApplyBatch(b RecordBatch, k int) string {
	if kb, ok := b.(*testKeyedBatch); ok {
		if kb.bad != "" {
			return "keys: " + kb.bad
		}
		return s.apply(kb.recs[k])
	}
	return s.apply(b.(*testBatch).recs[k])
}
func (b *testBatch) Add(rec []byte, valid bool) { b.recs = append(b.recs, readTestRec(rec, valid)) }
func (b *testBatch) Reset()                     { b.recs = b.recs[:0] }
func (b *testKeyedBatch) Reset()                { b.recs, b.bad = b.recs[:0], "" }

// genRecords is k lines of records for seqProfile (blank lines among them), with a syntax
// fault, a checklist problem or both when asked.
func genRecords(r *rand.Rand, k int, fault, problem bool) []byte {
	var b bytes.Buffer
	faultAt, problemAt := -1, -1
	if fault {
		faultAt = r.IntN(k + 1)
	}
	if problem {
		problemAt = r.IntN(k + 1)
	}
	i := 0
	for j := 0; j < k; j++ {
		switch {
		case j == faultAt:
			b.WriteString([]string{"[1]", "{\"a\":\xff}", "{\"a\":", "{} x"}[r.IntN(4)])
		case j == problemAt:
			b.WriteString([]string{`{"dup":1}`, `{"i":-5}`, `{"h":false}`}[r.IntN(3)])
		case r.IntN(8) == 0:
			b.WriteString([]string{"", "  ", "\r"}[r.IntN(3)])
		default:
			i += 1 + r.IntN(2)/max(1, r.IntN(4))
			fmt.Fprintf(&b, "{\"i\":%d,\"s\":%q}", i, strings.Repeat("é\"", r.IntN(30)))
		}
		b.WriteString([]string{"\n", "\n", "\r\n"}[r.IntN(3)])
	}
	if faultAt == k {
		b.WriteString(`{"torn":`)
	}
	return b.Bytes()
}

// A record checklist's pass by batches on several goroutines, with blocks and buffers much
// smaller than the lines, gives the verdict (kind, offset, detail, warnings) of a walk from
// the start that feeds the sequence record by record.
func TestRecordBlocksAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 3))
	p := seqProfile{plain{jsonl: true}}
	for iter := 0; iter < 400; iter++ {
		data := genRecords(r, r.IntN(60), iter%3 == 1, iter%4 == 2)
		n := int64(len(data))
		want := judgeRecords(p, "", func(fn lineFunc) error { return memWalker(data)(0, n, false, fn) })
		for _, block := range []int64{1, 5, 16, 61, 512, 1 << 20} {
			for _, workers := range []int{1, 2, 3} {
				seq := p.NewSequence("").(BatchSequence)
				seq.(*testSeq).keyed = workers != 2
				v, _, ok := recordBlocks(p, passState{seq: seq}, n, workers, block, 1<<20, func(int) walker { return memWalker(data) })
				if !ok || !sameVerdict(v, want) || fmt.Sprint(v.Warnings) != fmt.Sprint(want.Warnings) {
					t.Fatalf("memory blocks of %d, %d workers, %q:\n got %+v (%v)\nwant %+v", block, workers, data, v, ok, want)
				}
				buf := 1 + r.IntN(100)
				seq = p.NewSequence("").(BatchSequence)
				seq.(*testSeq).keyed = workers == 2
				v, _, ok = recordBlocks(p, passState{seq: seq}, n, workers, block, 1<<20, func(held int) walker { return readWalker(bytes.NewReader(data), n, buf, held, nil) })
				if !ok || !sameVerdict(v, want) || fmt.Sprint(v.Warnings) != fmt.Sprint(want.Warnings) {
					t.Fatalf("read blocks of %d, buffer %d, %d workers, %q:\n got %+v (%v)\nwant %+v", block, buf, workers, data, v, ok, want)
				}
			}
		}
		// A line longer than a worker holds: the pass is made again on one goroutine.
		if bytes.Count(data, []byte("é")) > 0 {
			seq := p.NewSequence("").(BatchSequence)
			if v, _, ok := recordBlocks(p, passState{seq: seq}, n, 2, 8, 4, func(held int) walker { return readWalker(bytes.NewReader(data), n, 2, held, nil) }); ok && !sameVerdict(v, want) {
				t.Fatalf("held 4, %q: %+v, want %+v", data, v, want)
			}
		}
	}
}

// A file over parallelFrom is judged by batches when StreamInspect reads it, with the verdict
// of a walk from the start; a pass that also hashes what it reads (InspectSum, reading in
// order through one tee) is never spread over workers, and its sum is the bytes'.
func TestRecordBlocksEntryPoints(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 5))
	p := seqProfile{plain{jsonl: true}}
	dir := t.TempDir()
	for iter := 0; iter < 6; iter++ {
		var b bytes.Buffer
		for int64(b.Len()) < parallelFrom+3*lineBlock {
			b.Write(genRecords(r, 200, false, false))
		}
		switch iter % 3 {
		case 1:
			b.WriteString("{\"i\":1}\n") // i goes back: a checklist problem
			b.Write(genRecords(r, 2000, false, false))
		case 2:
			b.WriteString("{\"a\":\n") // a syntax fault
			b.Write(genRecords(r, 2000, false, false))
		}
		data := b.Bytes()
		n := int64(len(data))
		want := judgeRecords(p, "", func(fn lineFunc) error { return memWalker(data)(0, n, false, fn) })
		path := filepath.Join(dir, fmt.Sprintf("%d.jsonl", iter))
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		v, _, err := StreamInspect(path, p)
		if err != nil || !sameVerdict(v, want) || fmt.Sprint(v.Warnings) != fmt.Sprint(want.Warnings) {
			t.Fatalf("StreamInspect: %+v, %v; want %+v", v, err, want)
		}
		v, sum, err := InspectSum(p, path, bytes.NewReader(data), n)
		if err != nil || !sameVerdict(v, want) {
			t.Fatalf("InspectSum: %+v, %v; want %+v", v, err, want)
		}
		if h := sha256.Sum256(data); v.Status == Healthy && sum != hex.EncodeToString(h[:]) {
			t.Fatalf("InspectSum: sum %s, want %x", sum, h)
		}
	}
}
