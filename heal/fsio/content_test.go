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
