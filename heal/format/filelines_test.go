package format

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// damagedPair is a JSONL file of records damaged the ways the apps' files are (records glued,
// a torn last line, garbage, a NUL run, lines lost, CRLF ends), and a candidate repair of it
// (the file before the damage, an older prefix of it, or one with lines of its own).
func damagedPair(r *rand.Rand) (damaged, cand []byte) {
	var lines [][]byte
	for i := range 2 + r.IntN(40) {
		pad := strings.Repeat("x", r.IntN(60))
		if r.IntN(12) == 0 {
			pad = strings.Repeat("y", 200+r.IntN(100)) // over half a small window
		}
		end := "\n"
		if r.IntN(10) == 0 {
			end = "\r\n"
		}
		lines = append(lines, fmt.Appendf(nil, `{"type":"m","id":%d,"t":"%s"}%s`, i%(5+r.IntN(40)), pad, end))
	}
	orig := bytes.Join(lines, nil)
	var d []byte
	for i, l := range lines {
		switch r.IntN(14) {
		case 0: // glued to the next
			d = append(d, bytes.TrimRight(l, "\r\n")...)
		case 1: // garbage
			d = append(d, "not json\n"...)
			d = append(d, l...)
		case 2: // lost
		case 3: // a NUL run in its place
			d = append(d, bytes.Repeat([]byte{0}, len(l)-1)...)
			d = append(d, '\n')
		case 4: // torn in its middle, then the rest
			d = append(d, l[:len(l)/2]...)
			d = append(d, '\n')
		default:
			d = append(d, l...)
		}
		if i == len(lines)-1 {
			switch r.IntN(4) {
			case 0: // a torn last line
				d = append(d, l[:len(l)/2]...)
			case 1: // a record written again, cut in its middle after a '\r'
				d = append(d, l[:len(l)/2]...)
				d = append(d, '\r')
			}
		}
	}
	switch r.IntN(4) {
	case 0:
		cand = orig
	case 1:
		cand = bytes.Join(lines[:r.IntN(len(lines))], nil)
	case 2:
		for _, l := range lines {
			if r.IntN(3) > 0 {
				cand = append(cand, l...)
			} else {
				cand = append(cand, `{"other":1}`+"\n"...)
			}
		}
	default:
		cand = append(bytes.Clone(orig), `{"id":999,"t":"new"}`+"\n"...)
	}
	return d, cand
}

// A candidate measured from its file (SurveyCand.File) is measured as the same bytes held:
// the same figures, prefix and loss, or ErrHoldCandidate where it cannot be (then never for a
// small number of searches and no line over the window).
func TestSurveyFileCandidate(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 21))
	held, fromFile := 0, 0
	for _, window := range []int{250, 400, 1 << 20} {
		withWindow(window, func() {
			for _, p := range []Profile{plain{jsonl: true}, keyedLog{plain{jsonl: true}}, rejoiner{plain{jsonl: true}}} {
				for range 600 {
					d, cand := damagedPair(r)
					n := int64(len(d))
					a := &SurveyCand{Data: cand}
					want, err := Survey(bytes.NewReader(d), n, p, SurveyOptions{}, []*SurveyCand{a})
					if err != nil {
						t.Fatal(err)
					}
					b := &SurveyCand{File: bytes.NewReader(cand), Size: int64(len(cand))}
					got, err := Survey(bytes.NewReader(d), n, p, SurveyOptions{}, []*SurveyCand{b})
					if errors.Is(err, ErrHoldCandidate) {
						held++
						continue
					}
					if err != nil {
						t.Fatal(err)
					}
					fromFile++
					if got != want || a.PrefixN != b.PrefixN || a.Lost != b.Lost || a.LostBytes != b.LostBytes {
						t.Fatalf("%T, window %d: damaged %q, candidate %q:\nfrom its file %+v %d %d %d\nheld          %+v %d %d %d",
							p, window, d, cand, got, b.PrefixN, b.Lost, b.LostBytes, want, a.PrefixN, a.Lost, a.LostBytes)
					}
				}
			}
		})
	}
	if fromFile < 3000 || held == 0 {
		t.Fatalf("%d measured from the file, %d held", fromFile, held)
	}
	t.Logf("%d measured from the file, %d held", fromFile, held)
}

// errAt fails every read past n bytes.
type errAt struct {
	b []byte
	n int64
}

func (e errAt) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > e.n {
		return 0, errors.New("read failed")
	}
	return copy(p, e.b[off:]), nil
}

// More searches of a candidate's bytes than fileLinePasses, or a read of it that fails, ask
// for it held.
func TestSurveyFileCandidateHeld(t *testing.T) {
	p := rejoiner{plain{jsonl: true}} // splits records glued on a line
	var d, cand []byte
	for i := range 12 { // twelve lines of two records each, none of them in the candidate
		d = fmt.Appendf(d, `{"type":"a","n":%d}{"type":"b","n":%d}`+"\n", i, i)
		cand = fmt.Appendf(cand, `{"type":"c","n":%d}`+"\n", i)
	}
	c := &SurveyCand{File: bytes.NewReader(cand), Size: int64(len(cand))}
	if _, err := Survey(bytes.NewReader(d), int64(len(d)), p, SurveyOptions{}, []*SurveyCand{c}); !errors.Is(err, ErrHoldCandidate) {
		t.Fatalf("%d searches: %v", 24, err)
	}
	d = d[:2*len(d)/12] // two lines, four searches
	c = &SurveyCand{File: bytes.NewReader(cand), Size: int64(len(cand))}
	if _, err := Survey(bytes.NewReader(d), int64(len(d)), p, SurveyOptions{}, []*SurveyCand{c}); err != nil {
		t.Fatalf("four searches: %v", err)
	}
	c = &SurveyCand{File: errAt{cand, 10}, Size: int64(len(cand))}
	if _, err := Survey(bytes.NewReader(d), int64(len(d)), p, SurveyOptions{}, []*SurveyCand{c}); !errors.Is(err, ErrHoldCandidate) {
		t.Fatalf("a read that fails: %v", err)
	}
}

// FuzzSurveyFileCandidate: for any damaged file and candidate, the candidate measured from its
// file gets the figures of the same bytes held (or asks to be held); and the union of the
// candidate, as a copy, with the file, as a salvage, said as a splice of the copy is the
// union held.
func FuzzSurveyFileCandidate(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 3))
	for i := range 24 {
		d, cand := damagedPair(r)
		f.Add(d, cand, uint8(i))
	}
	profiles := []Profile{plain{jsonl: true}, keyedLog{plain{jsonl: true}}, rejoiner{plain{jsonl: true}}}
	f.Fuzz(func(t *testing.T, d, cand []byte, which uint8) {
		if len(d) > 1<<16 || len(cand) > 1<<16 {
			return
		}
		p := profiles[int(which)%len(profiles)]
		withWindow(256, func() {
			a := &SurveyCand{Data: cand}
			want, err := Survey(bytes.NewReader(d), int64(len(d)), p, SurveyOptions{}, []*SurveyCand{a})
			if err != nil {
				return // not surveyed streaming (a number over MaxLine): nothing to compare
			}
			b := &SurveyCand{File: bytes.NewReader(cand), Size: int64(len(cand))}
			got, err := Survey(bytes.NewReader(d), int64(len(d)), p, SurveyOptions{}, []*SurveyCand{b})
			switch {
			case errors.Is(err, ErrHoldCandidate):
			case err != nil:
				t.Fatal(err)
			case got != want || a.PrefixN != b.PrefixN || a.Lost != b.Lost || a.LostBytes != b.LostBytes:
				t.Fatalf("damaged %q, candidate %q:\nfrom its file %+v %d %d %d\nheld          %+v %d %d %d",
					d, cand, got, b.PrefixN, b.Lost, b.LostBytes, want, a.PrefixN, a.Lost, a.LostBytes)
			}
			held, herr := UnionFrom(p, cand, bytes.NewReader(d), int64(len(d)), 200)
			sp, serr := UnionSplice(p, bytes.NewReader(cand), int64(len(cand)), bytes.NewReader(d), int64(len(d)), 200)
			switch {
			case errors.Is(serr, ErrHoldCandidate):
			case serr != nil || herr != nil:
				if serr != herr {
					t.Fatalf("copy %q, salvage %q: splice %v, held %v", cand, d, serr, herr)
				}
			default:
				if b, err := sp.Bytes(bytes.NewReader(cand)); err != nil || !bytes.Equal(b, held) {
					t.Fatalf("copy %q, salvage %q: splice %q (%v), held %q", cand, d, b, err, held)
				}
			}
		})
	})
}

// A candidate with lines over the window is measured from its file, those lines known by
// their hashes, and held only where a hunk of the damaged file would compare one of them.
func TestSurveyFileCandidateLongLines(t *testing.T) {
	p := rejoiner{plain{jsonl: true}}
	long := `{"type":"a","out":"` + strings.Repeat("x", 3000) + `"}` + "\n"
	var orig []byte
	for i := range 20 {
		orig = fmt.Appendf(orig, `{"type":"b","n":%d}`+"\n", i)
		if i%5 == 2 {
			orig = append(orig, long...)
		}
	}
	withWindow(512, func() {
		for _, tc := range []struct {
			name string
			d    []byte
			held bool
		}{
			// a line glued at the end, two records of which the candidate keeps one: no
			// long line near it
			{"glued", bytes.Replace(orig, []byte(`{"type":"b","n":18}`+"\n"), []byte(`{"type":"b","n":18}{"type":"z"}`+"\n"), 1), false},
			// a long line torn: its whole version in the candidate is what the hunk
			// compares
			{"torn long", append(bytes.Clone(orig), long[:1000]...), false},
			// a damaged line whose hunk ends past a long line of the candidate (the damaged
			// file lost it)
			{"hunk over a long line", bytes.Replace(orig, []byte(`{"type":"b","n":2}`+"\n"+long), []byte(`{"type":"b","n":2`+"\n"), 1), true},
		} {
			a := &SurveyCand{Data: orig}
			want, err := Survey(bytes.NewReader(tc.d), int64(len(tc.d)), p, SurveyOptions{}, []*SurveyCand{a})
			if err != nil {
				t.Fatal(err)
			}
			b := &SurveyCand{File: bytes.NewReader(orig), Size: int64(len(orig))}
			got, err := Survey(bytes.NewReader(tc.d), int64(len(tc.d)), p, SurveyOptions{}, []*SurveyCand{b})
			if tc.held {
				if !errors.Is(err, ErrHoldCandidate) {
					t.Errorf("%s: %v, want the candidate held", tc.name, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if got != want || a.PrefixN != b.PrefixN || a.Lost != b.Lost || a.LostBytes != b.LostBytes {
				t.Fatalf("%s: from its file %+v %d %d %d, held %+v %d %d %d", tc.name, got, b.PrefixN, b.Lost, b.LostBytes, want, a.PrefixN, a.Lost, a.LostBytes)
			}
		}
	})
}
