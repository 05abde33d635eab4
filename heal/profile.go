package heal

import (
	"time"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/policy"
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

// fileRead is file() for bytes that are the file's own, of identity id, read from it from
// began on.
func (c *fileCtx) fileRead(id fsio.Identity, began time.Time) format.File {
	f := c.file()
	f.Read, f.ReadBegan = id, began
	return f
}

// DamageKinds lists the damage kinds a verdict on a file of rule r can name: those of the
// profiles its format may choose (format.Kinds), and a stale temp file's where the rule
// cleans them.
func (e *Engine) DamageKinds(r *policy.Rule) []string {
	ks := e.reg.Kinds(r.Format)
	if r.HasStrategy(policy.CleanTemp) {
		ks = append(ks, KindStaleTemp)
	}
	return ks
}
