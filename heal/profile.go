package heal

import (
	"bytes"
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

// fileType is a format.Profile: the questions format's generic validation asks of it.
var _ format.Profile = fileType(0)

func (t fileType) Name() string { return t.String() }

func (t fileType) JSONL() bool {
	switch t {
	case ftJSONL, ftNanobot, ftOVMessages, ftOpenClawTranscript:
		return true
	}
	return false
}

func (t fileType) Dialect() jsonv.Dialect {
	switch t {
	case ftCopaw:
		return jsonv.Dialect{NonFinite: true, Surrogates: true}
	case ftNanobot, ftPraison, ftOVMessages, ftOVMeta:
		return jsonv.Dialect{NonFinite: true}
	}
	return jsonv.Dialect{}
}

// EmptyIsDamage reports whether a 0-byte file of this type is never written by its app.
func (t fileType) EmptyIsDamage() bool {
	switch t {
	case ftJSONL, ftOVMessages:
		return false
	}
	return true
}

// AppendOnly: the types whose apps only ever append (a generic JSONL log, an OpenClaw
// transcript). nanobot and OpenViking rewrite whole files, so they always get a full pass.
func (t fileType) AppendOnly() bool { return t == ftJSONL || t == ftOpenClawTranscript }

// Plain: generic JSON and JSONL, whose whole checklist is the syntax (and, for JSONL, one
// record per line), so a streaming pass judges them exactly as inspectBytes does.
func (t fileType) Plain() bool { return t == ftJSON || t == ftJSONL }

func (t fileType) jsonl() bool            { return t.JSONL() }
func (t fileType) dialect() jsonv.Dialect { return t.Dialect() }
func (t fileType) ctx(f format.File) *fileCtx {
	return &fileCtx{path: f.Path, typ: t, lastGood: f.LastGood, maxSize: f.MaxSize}
}

func (t fileType) CheckValue(f format.File, data []byte, root *jsonv.Value) Verdict {
	switch t {
	case ftCopaw:
		return checkCopaw(t.ctx(f), data, root)
	case ftPraison:
		return checkPraison(t.ctx(f), data, root)
	case ftOVMeta:
		return checkOVMeta(t.ctx(f), data, root)
	case ftOpenClawStore:
		return checkOpenClawStore(t.ctx(f), data, root)
	}
	return healthy()
}

func (t fileType) CheckLines(f format.File, lines []jsonlLine) Verdict {
	switch t {
	case ftNanobot:
		return checkNanobot(t.ctx(f), lines)
	case ftOVMessages:
		return checkOVMessages(t.ctx(f), lines)
	case ftOpenClawTranscript:
		return checkOpenClawTranscript(t.ctx(f), lines)
	}
	return healthy()
}

func (t fileType) Records(root *jsonv.Value) int {
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

// SkipReason: an OpenViking file in an OVE1 envelope is encrypted; an OpenClaw file of the
// SQLite era is not the app's live state.
func (t fileType) SkipReason(path string, data []byte) string {
	if (t == ftOVMessages || t == ftOVMeta) && bytes.HasPrefix(data, []byte("OVE1")) {
		return "encrypted (OVE1 envelope)"
	}
	if t == ftOpenClawStore || t == ftOpenClawTranscript {
		return openclawSQLiteEra(path)
	}
	return ""
}

// CheckEmpty: an empty OpenViking messages file is damage only when its metadata counts
// messages.
func (t fileType) CheckEmpty(f format.File) Verdict {
	if t == ftOVMessages {
		return ovEmptyMessages(t.ctx(f))
	}
	if t.EmptyIsDamage() {
		return damaged(KindEmpty, 0, "file is empty")
	}
	return healthy()
}

// RecordProblem, NoRecords and AppendedOK: the OpenClaw transcript checklist, one record at
// a time; the other types have none.
func (t fileType) RecordProblem(rec []byte, first bool) string {
	if t == ftOpenClawTranscript {
		return transcriptLineProblem(rec, first)
	}
	return ""
}

func (t fileType) NoRecords() Verdict {
	if t == ftOpenClawTranscript {
		return damaged(KindEmpty, 0, "transcript has no header")
	}
	return healthy()
}

func (t fileType) AppendedOK(rec []byte) bool {
	if t == ftOpenClawTranscript {
		return transcriptAppendedOK(rec)
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

func (c *fileCtx) file() format.File {
	return format.File{Path: c.path, LastGood: c.lastGood, MaxSize: c.maxSize}
}

// syntaxVerdict maps a scanner error to a damage verdict.
func syntaxVerdict(err error, base int64) Verdict { return format.SyntaxVerdict(err, base) }

// inspectBytes judges a file's content with its type's full checklist.
func inspectBytes(c *fileCtx, data []byte) Verdict { return format.Inspect(c.typ, c.file(), data) }

// jsonlLine is one line of a JSONL file as the checklists see it.
type jsonlLine = format.Line

// splitJSONL validates every line; the records' trees are parsed only for types whose
// checklists read them.
func splitJSONL(data []byte, t fileType) []jsonlLine { return format.Split(data, t) }

// records counts the history a file holds, for choosing between plans and measuring loss.
func records(t fileType, data []byte) int { return format.Records(t, data) }

func isStr(v *jsonv.Value) bool { return v != nil && v.Type == jsonv.String }
func isObj(v *jsonv.Value) bool { return v != nil && v.Type == jsonv.Object }
func isArr(v *jsonv.Value) bool { return v != nil && v.Type == jsonv.Array }

func strOf(v *jsonv.Value) string {
	if isStr(v) {
		return v.Str
	}
	return ""
}
