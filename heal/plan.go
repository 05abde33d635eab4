package heal

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/policy"
)

// edit is one file a plan rewrites.
type edit struct {
	path    string
	old     []byte   // the bytes that were read; nil when the file was missing
	oldID   Identity // zero when missing
	missing bool
	data    []byte
	big     *bigEdit // a big file's edit (bigplan.go): old is nil, and data too unless held in memory
}

// plan is one strategy's proposed repair.
type plan struct {
	strategy    policy.Strategy
	edits       []edit // edits[0] is the inspected file
	lostBytes   int64
	lostRecords int
	total       int // records of the damaged file, the base of the loss ratio
	keep        int // records the result holds
}

func (p *plan) lossRatio() float64 {
	if p.total == 0 {
		return 0
	}
	return float64(p.lostRecords) / float64(p.total)
}

// inspection is what one read of a file established.
type inspection struct {
	ctx     fileCtx
	data    []byte
	buf     []byte // the pooled buffer data was read into, or nil (release)
	id      Identity
	missing bool
	verdict Verdict

	incremental bool              // validated without holding the bytes (incremental or streaming); data is nil
	copyFrom    bool              // healthy, judged streaming: its last-good copy is copied from the file
	tooLarge    bool              // damaged, and too large to plan a repair in memory
	big         bool              // damaged, judged streaming and planned from the file (bigplan.go); data is nil
	bigEnd      int64             // big JSON with trailing garbage: the end of its first value, else -1
	docRecords  int               // a big app document that parses: the records it holds (inspectDoc)
	tornCut     *format.TornCut   // a big app log's torn last line, judged and its cut planned (inspectTorn)
	finish      *earlyFinish      // ... and its app's finish of the bytes kept, started beside that judge
	front       *format.Front     // a big app log's first damaged line, and its checklist's state there (format.StreamInspectFront)
	docFirst    *format.DocFirst  // a big app document with trailing bytes: its first value's verdict, judged in its pass (heal)
	docSums     *format.AsideHash // ... and its sum and the value's, being taken since (the planner's)
	copyErr     error             // the state dir refused its last-good copy (see [copyFailed])
	at          time.Time         // when the read that found the file to be id began (id at its open, and still at its end), else when the inspection ended: it was id from then on, as far as it knows
}

// candidateOK reports whether bytes would be a healthy file at c's path.
func candidateOK(c *fileCtx, data []byte) bool {
	return candidate(c, data).Status == Healthy
}

// candidate is the verdict bytes would get as the file at c's path.
func candidate(c *fileCtx, data []byte) Verdict {
	cc := *c
	cc.lastGood = nil
	return format.Inspect(cc.typ, cc.file(), data)
}

// best picks the plan that keeps the most history; ties go to policy order.
func best(plans []*plan) *plan {
	var b *plan
	for _, p := range plans {
		if b == nil || p.keep > b.keep {
			b = p
		}
	}
	return b
}

// backupPaths are the file's backups, newest first: its app's own, or the rule's templates'.
func backupPaths(rule *policy.Rule, c *fileCtx) []string {
	if b, ok := c.typ.(format.BackupFinder); ok {
		return b.Backups(c.path)
	}
	var cands []string
	for _, tmpl := range rule.Backups {
		m, _ := filepath.Glob(policy.ExpandTemplate(tmpl, c.path))
		sort.Slice(m, func(i, j int) bool { return modTime(m[i]) > modTime(m[j]) })
		cands = append(cands, m...)
	}
	return cands
}

func modTime(p string) int64 {
	fi, err := os.Lstat(p)
	if err != nil {
		return 0
	}
	return fi.ModTime().UnixNano()
}

func (p *plan) String() string {
	return fmt.Sprintf("%s (drops %d of %d records, %d bytes)", p.strategy, p.lostRecords, p.total, p.lostBytes)
}
