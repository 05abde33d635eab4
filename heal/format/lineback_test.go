package format

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

type lineAt struct {
	start      int64
	line       string
	terminated bool
}

// EachLineBack gives EachLine's lines, last first, whatever the block size: random bytes
// rich in newlines, CRs and long lines, blocks of 1 byte to more than the file; a walk
// stopped early gives the lines up to there.
func TestEachLineBackIsEachLineReversed(t *testing.T) {
	defer func(b int) { backBlock = b }(backBlock)
	rng := rand.New(rand.NewPCG(3, 5))
	for i := range 3000 {
		var b bytes.Buffer
		for range rng.IntN(12) {
			switch rng.IntN(4) {
			case 0:
				b.WriteByte('\n')
			case 1:
				b.WriteString("\r\n")
			default:
				b.Write(bytes.Repeat([]byte{'a' + byte(rng.IntN(3))}, rng.IntN(40)))
			}
		}
		data := b.Bytes()
		var want []lineAt
		EachLine(bytes.NewReader(data), func(start int64, line []byte, terminated bool) error {
			want = append(want, lineAt{start, string(line), terminated})
			return nil
		})
		backBlock = 1 + rng.IntN(2*len(data)+2)
		var got []lineAt
		stop := -1
		if i%3 == 0 && len(want) > 0 {
			stop = rng.IntN(len(want))
		}
		err := EachLineBack(bytes.NewReader(data), int64(len(data)), func(start int64, line []byte, terminated bool) error {
			got = append(got, lineAt{start, string(line), terminated})
			if len(got)-1 == stop {
				return Stop
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for k := range got {
			if k >= len(want) || got[k] != want[len(want)-1-k] {
				t.Fatalf("%q (block %d): backward %v, forward %v", data, backBlock, got, want)
			}
		}
		if n := len(want); stop >= 0 && len(got) != stop+1 || stop < 0 && len(got) != n {
			t.Fatalf("%q: %d lines backward of %d (stop at %d)", data, len(got), n, stop)
		}
	}
}

// FuzzEachLineBack: EachLineBack gives EachLine's lines, last first, at any block size.
func FuzzEachLineBack(f *testing.F) {
	for _, s := range []string{"", "\n", "a", "a\n", "a\n\nb", "{\"a\":1}\r\n{\"b\":2}\n{", "\n\n\n"} {
		f.Add([]byte(s), uint16(1))
		f.Add([]byte(s), uint16(7))
	}
	f.Fuzz(func(t *testing.T, data []byte, block uint16) {
		defer func(b int) { backBlock = b }(backBlock)
		backBlock = 1 + int(block)%(2*len(data)+2)
		var want []lineAt
		EachLine(bytes.NewReader(data), func(start int64, line []byte, terminated bool) error {
			want = append(want, lineAt{start, string(line), terminated})
			return nil
		})
		k := len(want)
		err := EachLineBack(bytes.NewReader(data), int64(len(data)), func(start int64, line []byte, terminated bool) error {
			k--
			if k < 0 || (lineAt{start, string(line), terminated}) != want[k] {
				t.Fatalf("%q (block %d): line %d backward is %q at %d", data, backBlock, k, line, start)
			}
			return nil
		})
		if err != nil || k != 0 {
			t.Fatalf("%q: %v, %d lines not given", data, err, k)
		}
	})
}
