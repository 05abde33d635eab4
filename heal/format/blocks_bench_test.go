package format

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// benchJSONL writes about size bytes of chat-like JSONL records to a temp file.
func benchJSONL(b *testing.B, size int) (*os.File, int64) {
	b.Helper()
	var data []byte
	for i := 0; len(data) < size; i++ {
		data = fmt.Appendf(data, `{"id":"msg_%08d","role":"assistant","content":"Some prose with \"quotes\", a tab\t, unicode é ü 漢字 and a number %d, repeated to fill the record out to a usual size for a chat transcript line","tokens":[1,2,3,%d],"ok":true,"parent":null}`+"\n", i, i*7, i)
	}
	path := filepath.Join(b.TempDir(), "bench.jsonl")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	return f, int64(len(data))
}

func BenchmarkPlainJSONL64MiB(b *testing.B) {
	f, n := benchJSONL(b, 64<<20)
	d := jsonv.Dialect{}
	for _, buf := range []int{128 << 10, 256 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("walk/buf=%dK", buf>>10), func(b *testing.B) {
			b.SetBytes(n)
			for b.Loop() {
				if v, err := plainWalk(n, lineRules{d: d}, readWalker(f, n, buf, MaxLine, nil)); err != nil || v.Status != Healthy {
					b.Fatal(v, err)
				}
			}
		})
		for _, block := range []int64{256 << 10, 1 << 20, 4 << 20} {
			b.Run(fmt.Sprintf("blocks=%dK/buf=%dK", block>>10, buf>>10), func(b *testing.B) {
				b.SetBytes(n)
				for b.Loop() {
					v, err := plainBlocks(n, lineRules{d: d}, 2, block, heldPerWorker, func(held int) walker { return readWalker(f, n, buf, held, nil) })
					if err != nil || v.Status != Healthy {
						b.Fatal(v, err)
					}
				}
			})
		}
	}
}

func BenchmarkPlainJSONL64MiBMemory(b *testing.B) {
	f, n := benchJSONL(b, 64<<20)
	data := make([]byte, n)
	if _, err := f.ReadAt(data, 0); err != nil {
		b.Fatal(err)
	}
	d := jsonv.Dialect{}
	b.Run("walk", func(b *testing.B) {
		b.SetBytes(n)
		for b.Loop() {
			if v, err := plainWalk(n, lineRules{d: d}, memWalker(data)); err != nil || v.Status != Healthy {
				b.Fatal(v, err)
			}
		}
	})
	b.Run("blocks", func(b *testing.B) {
		b.SetBytes(n)
		for b.Loop() {
			if v, err := plainBlocks(n, lineRules{d: d}, 2, lineBlock, heldPerWorker, func(int) walker { return memWalker(data) }); err != nil || v.Status != Healthy {
				b.Fatal(v, err)
			}
		}
	})
}
