package heal

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// fileType is what one file is within its app's layout.
type fileType int

const (
	ftJSON fileType = iota
	ftJSONL
	ftCopaw
	ftNanobot
	ftPraison
	ftOVMessages
	ftOVMeta
	ftOpenClawStore
	ftOpenClawTranscript
)

var fileTypeNames = map[fileType]string{
	ftJSON: "json", ftJSONL: "jsonl", ftCopaw: "copaw", ftNanobot: "nanobot",
	ftPraison: "praisonai", ftOVMessages: "openviking-messages", ftOVMeta: "openviking-meta",
	ftOpenClawStore: "openclaw-store", ftOpenClawTranscript: "openclaw-transcript",
}

func (t fileType) String() string { return fileTypeNames[t] }

// classify maps a rule's format and a path to the file type that judges it.
func classify(format, path string) fileType {
	base := filepath.Base(path)
	switch format {
	case "copaw", "qwenpaw":
		return ftCopaw
	case "nanobot":
		return ftNanobot
	case "praisonai":
		return ftPraison
	case "openviking":
		if base == ".meta.json" {
			return ftOVMeta
		}
		return ftOVMessages
	case "openclaw":
		if base == "sessions.json" || strings.HasPrefix(base, "sessions.json.") {
			return ftOpenClawStore
		}
		return ftOpenClawTranscript
	case "jsonl":
		return ftJSONL
	case "json":
		return ftJSON
	}
	if strings.HasSuffix(base, ".jsonl") {
		return ftJSONL
	}
	return ftJSON
}

func (t fileType) jsonl() bool {
	switch t {
	case ftJSONL, ftNanobot, ftOVMessages, ftOpenClawTranscript:
		return true
	}
	return false
}

func (t fileType) dialect() jsonv.Dialect {
	switch t {
	case ftCopaw:
		return jsonv.Dialect{NonFinite: true, Surrogates: true}
	case ftNanobot, ftPraison, ftOVMessages, ftOVMeta:
		return jsonv.Dialect{NonFinite: true}
	}
	return jsonv.Dialect{}
}

// emptyIsDamage reports whether a 0-byte file of this type is never written by its app.
func (t fileType) emptyIsDamage() bool {
	switch t {
	case ftJSONL, ftOVMessages:
		return false
	}
	return true
}

// fileCtx carries what a checklist may need beyond the bytes: where the file lives and
// sessionmedic's last-good copy of it.
type fileCtx struct {
	path     string
	typ      fileType
	lastGood []byte
	maxSize  int64
}

// syntaxVerdict maps a scanner error to a damage verdict.
func syntaxVerdict(err error, base int64) Verdict { return format.SyntaxVerdict(err, base) }

func allNUL(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return len(b) > 0
}

var bom = []byte{0xEF, 0xBB, 0xBF}

// inspectBytes judges a file's content with its type's full checklist.
func inspectBytes(c *fileCtx, data []byte) Verdict {
	if c.typ == ftOVMessages || c.typ == ftOVMeta {
		if bytes.HasPrefix(data, []byte("OVE1")) {
			return skipped("encrypted (OVE1 envelope)")
		}
	}
	if c.typ == ftOpenClawStore || c.typ == ftOpenClawTranscript {
		if reason := openclawSQLiteEra(c.path); reason != "" {
			return skipped("%s", reason)
		}
	}
	if len(data) == 0 {
		if c.typ == ftOVMessages {
			return ovEmptyMessages(c)
		}
		if c.typ.emptyIsDamage() {
			return damaged(KindEmpty, 0, "file is empty")
		}
		return healthy()
	}
	if allNUL(data) {
		return damaged(KindNULFilled, 0, "file is %d NUL bytes", len(data))
	}
	if bytes.HasPrefix(data, bom) {
		return damaged(KindBOM, 0, "file starts with a UTF-8 byte order mark")
	}
	var v Verdict
	if c.typ.jsonl() {
		v = inspectJSONL(c, data)
	} else {
		v = inspectJSON(c, data)
	}
	if v.Status == Healthy && c.typ.jsonl() && c.lastGood != nil && isLinePrefix(data, c.lastGood) {
		return damaged(KindTruncated, int64(len(data)), "a strict line-aligned prefix of the last-good copy (%d of %d bytes)", len(data), len(c.lastGood))
	}
	return v
}

func inspectJSON(c *fileCtx, data []byte) Verdict {
	if err := jsonv.Valid(data, c.typ.dialect()); err != nil {
		return syntaxVerdict(err, 0)
	}
	switch c.typ {
	case ftCopaw, ftPraison, ftOVMeta, ftOpenClawStore:
	default:
		return healthy() // no checklist reads the tree: valid is all there is to know
	}
	root, err := jsonv.Parse(data, c.typ.dialect())
	if err != nil {
		return syntaxVerdict(err, 0)
	}
	switch c.typ {
	case ftCopaw:
		return checkCopaw(c, data, root)
	case ftPraison:
		return checkPraison(c, data, root)
	case ftOVMeta:
		return checkOVMeta(c, data, root)
	case ftOpenClawStore:
		return checkOpenClawStore(c, data, root)
	}
	return healthy()
}

// jsonlLine is one line of a JSONL file as the checklists see it.
type jsonlLine struct {
	start, end int // bytes of the line including its '\n'
	raw        []byte
	val        *jsonv.Value // nil when the line is blank or malformed
	terminated bool
	blank      bool
	err        error
}

// anyObject stands for a valid object record whose contents no checklist reads.
var anyObject = &jsonv.Value{Type: jsonv.Object}

var errNotObject = errors.New("record is not a JSON object")

// splitJSONL validates every line; the records' trees are parsed only for types whose
// checklists read them.
func splitJSONL(data []byte, t fileType) []jsonlLine {
	d := t.dialect()
	var out []jsonlLine
	jsonv.Lines(data, func(start int, line []byte, terminated bool) bool {
		l := jsonlLine{start: start, end: start + len(line), raw: line, terminated: terminated}
		if terminated {
			l.end++
		}
		body := bytes.TrimSuffix(line, []byte("\r"))
		trimmed := bytes.TrimSpace(body)
		switch {
		case len(trimmed) == 0:
			l.blank = true
		case jsonv.Valid(body, d) != nil:
			l.err = jsonv.Valid(body, d)
		case trimmed[0] != '{':
			l.err = errNotObject
		case t == ftJSONL:
			l.val = anyObject
		default:
			if v, err := jsonv.Parse(body, d); err != nil {
				l.err = err
			} else {
				l.val = v
			}
		}
		out = append(out, l)
		return true
	})
	return out
}

func inspectJSONL(c *fileCtx, data []byte) Verdict {
	lines := splitJSONL(data, c.typ)
	for i, l := range lines {
		if l.blank {
			continue
		}
		if l.err != nil {
			if !l.terminated {
				return damaged(KindTruncated, int64(l.start), "torn last line %d: %v", i+1, l.err)
			}
			if e, ok := l.err.(*jsonv.Error); ok && e.Kind == jsonv.ErrInvalidUTF8 {
				return damaged(KindInvalidUTF8, int64(l.start)+e.Offset, "line %d: %s", i+1, e.Msg)
			}
			return damaged(KindMalformedRecord, int64(l.start), "line %d: %v", i+1, l.err)
		}
		if !l.terminated {
			return damaged(KindTruncated, int64(len(data)), "last line %d has no terminating newline", i+1)
		}
	}
	switch c.typ {
	case ftNanobot:
		return checkNanobot(c, lines)
	case ftOVMessages:
		return checkOVMessages(c, lines)
	case ftOpenClawTranscript:
		return checkOpenClawTranscript(c, lines)
	}
	return healthy()
}

// isLinePrefix: data is a non-empty strict prefix of full that ends on a line boundary.
func isLinePrefix(data, full []byte) bool {
	return len(data) > 0 && len(data) < len(full) && data[len(data)-1] == '\n' && bytes.HasPrefix(full, data)
}

// records counts the history a file holds, for choosing between plans and measuring loss.
func records(t fileType, data []byte) int {
	if t.jsonl() {
		n := 0
		for _, l := range splitJSONL(data, t) {
			if l.val != nil {
				n++
			}
		}
		return n
	}
	root, err := jsonv.Parse(data, t.dialect())
	if err != nil || root.Type != jsonv.Object {
		return 0
	}
	switch t {
	case ftCopaw:
		if c := root.Get("agent").Get("memory").Get("content"); c != nil {
			return len(c.Items)
		}
		return 0
	case ftPraison:
		return len(root.Get("messages").Items)
	case ftOpenClawStore:
		return len(root.Keys)
	}
	return 1
}

func isStr(v *jsonv.Value) bool { return v != nil && v.Type == jsonv.String }
func isObj(v *jsonv.Value) bool { return v != nil && v.Type == jsonv.Object }
func isArr(v *jsonv.Value) bool { return v != nil && v.Type == jsonv.Array }

func strOf(v *jsonv.Value) string {
	if isStr(v) {
		return v.Str
	}
	return ""
}
