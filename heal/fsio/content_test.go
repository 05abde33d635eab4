package fsio

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FileAt writes out the version of the file it names, hashed; a file replaced or grown since
// is ErrChanged, nothing taken from the new version.
func TestFileAtWritesTheVersionItNames(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sessions.json.bak.1")
	data := bytes.Repeat([]byte(`{"a":1}`), 100_000)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	id, err := StatIdentity(p)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	sum, err := FileAt{Path: p, ID: id}.WriteOut(&out, nil)
	want := sha256.Sum256(data)
	if err != nil || !bytes.Equal(out.Bytes(), data) || sum != hex.EncodeToString(want[:]) {
		t.Fatalf("WriteOut: %v, %d bytes, sum %s", err, out.Len(), sum)
	}
	if err := os.WriteFile(p, append(data, 'x'), 0o600); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if _, err := (FileAt{Path: p, ID: id}).WriteOut(&out, nil); !errors.Is(err, ErrChanged) {
		t.Fatalf("after a change: %v, want ErrChanged", err)
	}
}

// MarkHash is the sum of all written and of the first At bytes, however the writes cut them;
// Before is written exactly those first bytes.
func TestMarkHash(t *testing.T) {
	data := make([]byte, 10_000)
	for i := range data {
		data[i] = byte(i * 7)
	}
	hexSum := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	for _, at := range []int64{0, 1, 4095, 4096, 9999, 10_000} {
		for _, chunk := range []int{1, 7, 4096, 10_000} {
			m := NewMarkHash(at)
			var before bytes.Buffer
			m.Before = &before
			if at > 0 && m.MarkSum() != "" {
				t.Fatalf("at %d: a mark before its bytes were written", at)
			}
			for off := 0; off < len(data); off += chunk {
				if n, err := m.Write(data[off:min(off+chunk, len(data))]); err != nil || n != min(chunk, len(data)-off) {
					t.Fatalf("Write: %d, %v", n, err)
				}
			}
			if m.Sum() != hexSum(data) || m.MarkSum() != hexSum(data[:at]) {
				t.Fatalf("at %d, writes of %d: sums differ", at, chunk)
			}
			if !bytes.Equal(before.Bytes(), data[:at]) {
				t.Fatalf("at %d, writes of %d: %d bytes written before the mark", at, chunk, before.Len())
			}
		}
	}
}
