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
