package format

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// refJSONL is the verdict of a plain JSONL file as a walk of jsonv.Lines from the start
// gives it (the rule the block walks must agree with, written out independently).
func refJSONL(data []byte) Verdict {
	v := OK()
	n := 0
	jsonv.Lines(data, func(start int, line []byte, terminated bool) bool {
		n++
		body := bytes.TrimSuffix(line, []byte("\r"))
		trimmed := bytes.TrimSpace(body)
		if len(trimmed) == 0 {
			return true
		}
		err := jsonv.Valid(body, jsonv.Dialect{})
		if err == nil && trimmed[0] != '{' {
			err = ErrNotObject
		}
		var je *jsonv.Error
		switch {
		case err != nil && !terminated:
			v = Damage(KindTruncated, int64(start), "torn last line %d: %v", n, err)
		case errors.As(err, &je) && je.Kind == jsonv.ErrInvalidUTF8:
			v = Damage(KindInvalidUTF8, int64(start)+je.Offset, "line %d: %s", n, je.Msg)
		case err != nil:
			v = Damage(KindMalformedRecord, int64(start), "line %d: %v", n, err)
		case !terminated:
			v = Damage(KindTruncated, int64(len(data)), "last line %d has no terminating newline", n)
		default:
			return true
		}
		return false
	})
	return v
}

// genLines is a JSONL file of k lines of every shape the walks must treat alike: records
// short and long (some longer than the small blocks and buffers of the tests), blank lines,
// CRLF endings, and, when bad, one faulty line somewhere or a torn last line.
func genLines(r *rand.Rand, k int, bad bool) []byte {
	var b bytes.Buffer
	faultAt := -1
	if bad {
		faultAt = r.IntN(k + 1)
	}
	for i := 0; i < k; i++ {
		if i == faultAt {
			b.WriteString([]string{"[1]", "\x00\x00\x00\x00", "{\"a\":\xff}", "{\"a\":", "nul", "{} x", "\x00"}[r.IntN(7)])
			b.WriteString([]string{"\n", "\r\n"}[r.IntN(2)])
			continue
		}
		switch r.IntN(6) {
		case 0:
			b.WriteString([]string{"", "  ", "\r", "\t \r"}[r.IntN(4)])
		case 1:
			fmt.Fprintf(&b, "{\"long\":%q}", strings.Repeat("é-x", 5+r.IntN(80)))
		default:
			fmt.Fprintf(&b, "{\"i\":%d,\"s\":\"%s\"}", i, strings.Repeat("a", r.IntN(12)))
		}
		b.WriteString([]string{"\n", "\n", "\r\n"}[r.IntN(3)])
	}
	if faultAt == k {
		b.WriteString([]string{"{\"torn\":", "{\"whole\":1}", "  ", "{\"x\":1}\r"}[r.IntN(4)])
	}
	return b.Bytes()
}

func sameVerdict(a, b Verdict) bool {
	return a.Status == b.Status && a.Kind == b.Kind && a.Offset == b.Offset && a.Detail == b.Detail
}

// Every walk — in memory or read in blocks, on one goroutine or several, with blocks and
// buffers much smaller than the lines — gives the verdict of a walk from the start.
func TestBlockWalksAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 1))
	d := jsonv.Dialect{}
	for iter := 0; iter < 300; iter++ {
		data := genLines(r, 1+r.IntN(40), iter%3 != 0)
		want := refJSONL(data)
		n := int64(len(data))
		check := func(how string, v Verdict, err error) {
			t.Helper()
			if err != nil || !sameVerdict(v, want) {
				t.Fatalf("%s of %q:\n got %+v, %v\nwant %+v", how, data, v, err, want)
			}
		}
		v, err := plainWalk(n, lineRules{d: d}, memWalker(data))
		check("memory walk", v, err)
		for _, buf := range []int{1, 2, 7, 64, 4096} {
			v, err := plainWalk(n, lineRules{d: d}, readWalker(bytes.NewReader(data), n, buf, MaxLine, nil))
			check(fmt.Sprintf("read walk, buffer %d", buf), v, err)
		}
		// Lines longer than a small window judged streaming, never held.
		for _, window := range []int{1, 5, 16, 64} {
			lj := &longJudge{r: lineRules{d: d}, window: window}
			for _, buf := range []int{1, 7, 64} {
				v, err := plainWalk(n, lineRules{d: d}, readWalker(bytes.NewReader(data), n, buf, MaxLine, lj))
				check(fmt.Sprintf("read walk, buffer %d, window %d", buf, window), v, err)
			}
			v, err := plainLines(n, lineRules{d: d}, func(held int) walker { return readWalker(bytes.NewReader(data), n, 16, held, lj) })
			check(fmt.Sprintf("read blocks, window %d", window), v, err)
		}
		for _, block := range []int64{1, 3, 16, 61, 512} {
			for _, workers := range []int{1, 2, 3} {
				v, err := plainBlocks(n, lineRules{d: d}, workers, block, 1<<20, func(int) walker { return memWalker(data) })
				check(fmt.Sprintf("memory blocks of %d, %d workers", block, workers), v, err)
				buf := 1 + r.IntN(100)
				v, err = plainBlocks(n, lineRules{d: d}, workers, block, 1<<20, func(held int) walker { return readWalker(bytes.NewReader(data), n, buf, held, nil) })
				check(fmt.Sprintf("read blocks of %d, buffer %d, %d workers", block, buf, workers), v, err)
			}
		}
		if v := Inspect(plain{jsonl: true}, File{}, data); !sameVerdict(v, want) && !(len(data) == 0 && v.Status == Healthy) {
			t.Fatalf("Inspect(%q) = %+v, want %+v", data, v, want)
		}
	}
}

// A line longer than a worker may hold sends the block walk back to one goroutine, with the
// same verdict; a line over MaxLine is an ErrNoStream.
func TestBlockWalkLongLines(t *testing.T) {
	d := jsonv.Dialect{}
	long := "{\"a\":\"" + strings.Repeat("x", 300) + "\"}\n"
	for _, data := range []string{
		"{}\n" + long + "{}\n",
		"{}\n" + long + "[2]\n",
		"{}\n" + long[:200],
	} {
		n := int64(len(data))
		want := refJSONL([]byte(data))
		_, err := plainBlocks(n, lineRules{d: d}, 2, 16, 64, func(held int) walker { return readWalker(strings.NewReader(data), n, 8, held, nil) })
		if !errors.Is(err, errHeld) && want.Status == Healthy {
			t.Errorf("%q: a line over what a worker holds: %v, want errHeld", data, err)
		}
		v, err := plainWalk(n, lineRules{d: d}, readWalker(strings.NewReader(data), n, 8, MaxLine, nil))
		if err != nil || !sameVerdict(v, want) {
			t.Errorf("%q: %+v, %v; want %+v", data, v, err, want)
		}
	}
}

// xsAt is a ReaderAt of head, then n bytes of 'x', then tail: generated, never held.
type xsAt struct {
	head, tail string
	n          int64
}

func (r xsAt) size() int64 { return int64(len(r.head)) + r.n + int64(len(r.tail)) }

func (r xsAt) ReadAt(p []byte, off int64) (int, error) {
	size := r.size()
	if off >= size {
		return 0, io.EOF
	}
	k := int(min(int64(len(p)), size-off))
	h, x := int64(len(r.head)), int64(len(r.head))+r.n
	for i := range p[:k] {
		switch o := off + int64(i); {
		case o < h:
			p[i] = r.head[o]
		case o < x:
			p[i] = 'x'
		default:
			p[i] = r.tail[o-x]
		}
	}
	if k < len(p) {
		return k, io.EOF
	}
	return k, nil
}

// A line longer than MaxLine is judged streaming, never held: a valid record is healthy, a
// line of garbage is damage at its start; what is allocated stays near the line window,
// whatever the line's length (bytes allocated are counted, not time).
func TestStreamVerdictLineOverMaxLine(t *testing.T) {
	for _, c := range []struct {
		src  xsAt
		want Verdict
	}{
		{xsAt{head: "{}\n{\"a\":\"", n: MaxLine + 2*StreamBuf, tail: "\"}\n{}\n"}, OK()},
		{xsAt{head: "{}\n{\"a\":\"", n: MaxLine + 2*StreamBuf, tail: "\"}"}, Damage(KindTruncated, 3+MaxLine+2*StreamBuf+8, "last line 2 has no terminating newline")},
		{xsAt{head: "{}\n", n: MaxLine + 2*StreamBuf}, Damage(KindTruncated, 3, "torn last line 2: syntax at offset 0: invalid character 'x' looking for beginning of value")},
		{xsAt{head: "{}\n[\"", n: MaxLine, tail: "\"]\n"}, Damage(KindMalformedRecord, 3, "line 2: %v", ErrNotObject)},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		v, _, err := StreamVerdict(c.src, 0, c.src.size(), plain{jsonl: true})
		runtime.ReadMemStats(&after)
		if err != nil || !sameVerdict(v, c.want) {
			t.Errorf("%q…%q: %+v, %v; want %+v", c.src.head, c.src.tail, v, err, c.want)
		}
		if a := after.TotalAlloc - before.TotalAlloc; a > 4*LineWindow {
			t.Errorf("%q…%q: %d bytes allocated for a %d-byte line", c.src.head, c.src.tail, a, c.src.n)
		}
	}
}

// StreamInspect reads a file in blocks: lines cut by a block's end, a record longer than a
// block, CRLF, NUL runs and a torn last line are judged as in memory.
func TestStreamInspectBlocks(t *testing.T) {
	dir := t.TempDir()
	rec := func(n int) string { return "{\"s\":\"" + strings.Repeat("y", n) + "\"}" }
	body := strings.Repeat(rec(1000)+"\n", 3000) // ~3 MiB: lines cut by every 1 MiB block
	for _, c := range []struct {
		name, data string
	}{
		{"healthy", body},
		{"crlf", strings.ReplaceAll(body, "\n", "\r\n")},
		{"longer than a block", body + rec(3*StreamBuf) + "\n" + body},
		{"torn last line", body + rec(10)[:7]},
		{"no final newline", body + rec(10)},
		{"NUL run", body[:StreamBuf+5] + strings.Repeat("\x00", 4096) + body[StreamBuf+5:]},
		{"bad record after a block", body + body + "[1]\n" + body},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".jsonl")
		if err := os.WriteFile(path, []byte(c.data), 0o644); err != nil {
			t.Fatal(err)
		}
		want := refJSONL([]byte(c.data))
		v, _, err := StreamInspect(path, plain{jsonl: true})
		if err != nil || !sameVerdict(v, want) {
			t.Errorf("%s: StreamInspect = %+v, %v; want %+v", c.name, v, err, want)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sv, _, err := StreamVerdict(f, 0, int64(len(c.data)), plain{jsonl: true})
		f.Close()
		if err != nil || !sameVerdict(sv, want) {
			t.Errorf("%s: StreamVerdict = %+v, %v; want %+v", c.name, sv, err, want)
		}
		if iv := Inspect(plain{jsonl: true}, File{}, []byte(c.data)); !sameVerdict(iv, want) {
			t.Errorf("%s: Inspect = %+v; want %+v", c.name, iv, want)
		}
	}
}
