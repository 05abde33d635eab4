package format

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/internal/panics"
)

// raised runs fn and returns the panic it raised on this goroutine, or nil. A panic left on
// another goroutine would end the test binary instead.
func raised(fn func()) (p any) {
	defer func() { p = recover() }()
	fn()
	return nil
}

// isBoom: p is the panic "boom", carried as a *panics.Error with the stack it was raised in.
func isBoom(p any) bool {
	e, ok := p.(*panics.Error)
	return ok && e.Value == "boom" && strings.Contains(string(e.Stack), "panic(")
}

// boomAt is a reader of data that panics at any read reaching past at.
type boomAt struct {
	data []byte
	at   int64
}

func (b boomAt) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > b.at {
		panic("boom")
	}
	return bytes.NewReader(b.data).ReadAt(p, off)
}

// A panic on a goroutine a judge starts (the blocks of a plain or a record checklist's pass,
// the aside hash, the halves of a search) is raised again on the goroutine that waits for
// it, where a file's containment takes it, and never hangs that wait.
func TestAPanicOfAWorkerIsRaisedOnTheCaller(t *testing.T) {
	data := bytes.Repeat([]byte("{\"i\":2,\"s\":\"x\"}\n"), 400)
	n := int64(len(data))
	// A walker that panics in every block but the first: the first block's records go to
	// the sequence while another worker raises.
	panicky := func(int) walker {
		return func(from, limit int64, skip bool, fn lineFunc) error {
			if from > 0 {
				panic("boom")
			}
			return memWalker(data)(from, limit, skip, fn)
		}
	}
	p := seqProfile{plain{jsonl: true}}
	for _, workers := range []int{1, 2, 3} {
		if got := raised(func() {
			recordBlocks(p, passState{seq: p.NewSequence("")}, n, workers, 512, 1<<20, panicky)
		}); !isBoom(got) {
			t.Errorf("recordBlocks, %d workers: %v", workers, got)
		}
		if got := raised(func() { plainBlocks(n, rulesOf(plain{jsonl: true}), workers, 512, 1<<20, panicky) }); !isBoom(got) {
			t.Errorf("plainBlocks, %d workers: %v", workers, got)
		}
	}
	r := boomAt{data, n / 2}
	if got := raised(func() { HashAside(r, n).Wait() }); !isBoom(got) {
		t.Errorf("HashAside's Wait: %v", got)
	}
	if got := raised(func() { a := HashAside(r, n); <-a.done; a.Stop() }); !isBoom(got) {
		t.Errorf("HashAside's Stop: %v", got)
	}
	if got := raised(func() { containsAt(r, n, []byte("needle")) }); !isBoom(got) {
		t.Errorf("containsAt: %v", got)
	}
	// What is not a panic stays what it was.
	if _, err := HashAside(io.NewSectionReader(bytes.NewReader(data), 0, 10), n).Wait(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a short reader: %v", err)
	}
}
