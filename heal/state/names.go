package state

import (
	"encoding/base64"
	"unicode/utf8"
)

// A file name is any bytes but '/' and NUL; a JSON string is UTF-8, and encoding/json
// replaces what is not with U+FFFD. So a path that is not UTF-8 is also kept, exactly, in
// a *_b64 member beside it (base64 of its bytes), which a reader prefers: a quarantine
// entry restores to the exact name, a journal entry resolves the exact file.

// exactB64 is the base64 of s when s is not UTF-8, else "".
func exactB64(s string) string {
	if utf8.ValidString(s) {
		return ""
	}
	return base64.StdEncoding.EncodeToString([]byte(s))
}

// fromB64 sets *s to the bytes b64 holds, when it holds any.
func fromB64(s *string, b64 string) {
	if b64 == "" {
		return
	}
	if b, err := base64.StdEncoding.DecodeString(b64); err == nil {
		*s = string(b)
	}
}

func (m *Manifest) encodeNames() { m.PathB64, m.FileB64 = exactB64(m.Path), exactB64(m.File) }
func (m *Manifest) decodeNames() { fromB64(&m.Path, m.PathB64); fromB64(&m.File, m.FileB64) }

func (e *Entry) encodeNames() {
	for i := range e.Edits {
		ed := &e.Edits[i]
		ed.PathB64, ed.TempB64 = exactB64(ed.Path), exactB64(ed.Temp)
	}
}

func (e *Entry) decodeNames() {
	for i := range e.Edits {
		ed := &e.Edits[i]
		fromB64(&ed.Path, ed.PathB64)
		fromB64(&ed.Temp, ed.TempB64)
	}
}
