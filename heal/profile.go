package heal

import (
	"github.com/sessionmedic/sessionmedic/heal/format"
)

// profile is the file type that judges path under a rule's format (see heal/apps).
func (e *Engine) profile(format, path string) format.Profile { return e.reg.Profile(format, path) }

// fileCtx carries what a checklist may need beyond the bytes: where the file lives and
// sessionmedic's last-good copy of it.
type fileCtx struct {
	path     string
	typ      format.Profile
	lastGood []byte
	maxSize  int64
}

func (c *fileCtx) file() format.File {
	return format.File{Path: c.path, LastGood: c.lastGood, MaxSize: c.maxSize}
}

// inspectBytes judges a file's content with its type's full checklist.
func inspectBytes(c *fileCtx, data []byte) Verdict { return format.Inspect(c.typ, c.file(), data) }

// jsonlLine is one line of a JSONL file as the checklists see it.
type jsonlLine = format.Line

// splitJSONL validates every line; the records' trees are parsed only for types whose
// checklists read them.
func splitJSONL(data []byte, t format.Profile) []jsonlLine { return format.Split(data, t) }

// records counts the history a file holds, for choosing between plans and measuring loss.
func records(t format.Profile, data []byte) int { return format.Records(t, data) }
