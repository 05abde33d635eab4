package format

import (
	"encoding/hex"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
)

// Damage appended to a big append-only log, salvaged from what the daemon knows. Two writers
// that interleave their appends glue a record to the next or leave another's stub before it;
// planned from the file, the salvage costs passes over it all: the judge that finds the
// damage, the keeper's walk, the original's sha256, and the result's judge and sum. The
// daemon judged the bytes before the append already, a version and an append at a time
// (AppendCache), and kept their sha256 state (tailState): a salvage keeps every one of those
// lines as it is — each a record, none blank, no damaged line held when they end — so it is
// planned from the appended bytes alone, the same plan and figures, and both sums taken from
// that state. Only the judge of the result reads the file: a checklist that follows the
// records (a chain of parent ids) refuses a result that lost a record another names, which
// the records appended alone do not tell.

// TrySalvage plans the salvage of damage appended to a file the cache holds with its
// tailState (see RememberTail), as [PlanKeep] plans it from the file: the file is the
// remembered version with up to StreamBuf bytes appended that the incremental pass refuses,
// whose first line it refuses is no record (a record the checklist refuses appended is judged
// the usual way). v is the file's verdict — that line's fault, as the pass over the file
// finds it first — and tc the salvage: its splice, figures, and the original's and the
// result's sums. tc.Verdict is not set: the caller judges the result (tc.JudgeResult: from
// the checklist's state the entry holds at the remembered bytes' end, when it holds one;
// the caller drops the entry first, for that state goes on once). ok is
// false, nothing planned, for any other file: it is judged and planned the usual way. A
// profile that finishes a salvage (SalvageFinisher) or whose torn tail is not cut from the
// cache (tornCuttable) is never planned so.
func (c *AppendCache) TrySalvage(path string, p Profile, maxSize int64) (id fsio.Identity, v Verdict, tc TornCut, ok bool) {
	if _, fin := p.(SalvageFinisher); fin || !tornCuttable(p) {
		return id, v, tc, false
	}
	prev, f, id, app, ok := c.appendedBytes(path, maxSize)
	if !ok {
		return id, v, tc, false
	}
	defer f.Close()
	// The first line the incremental pass refuses (app is at most StreamBuf long: a line
	// over the window, which the pass over the file judges streaming, is judged held here,
	// by the same rules).
	fault, line, _ := appendedRefusal(p, memWalker(app), int64(len(app)), prev.size)
	if fault == nil {
		return id, v, tc, false // accepted (TryIncremental's), or a record the checklist refuses
	}
	if !frontPasses(p, path, f, prev.size) {
		return id, v, tc, false
	}
	// The keeper's walk, from where the remembered bytes end: before it, each of their lines
	// kept as it is (one range), and counted.
	k := keeperAfter(p, path, prev.size, prev.tail.lines)
	if err := k.walk(f, keepWalker(p, f, id.Size), prev.size, id.Size); err != nil || !k.s.KeepsFirst(prev.size) {
		return id, v, tc, false
	}
	// The result: the remembered bytes, and what the salvage keeps of the append.
	kept := make([]byte, k.s.Size()-prev.size)
	if n, _ := k.s.At(f).ReadAt(kept, prev.size); n != len(kept) {
		return id, v, tc, false
	}
	h, err := prev.tail.hash()
	if err != nil {
		return id, v, tc, false
	}
	h.Write(kept)
	keepSHA := hex.EncodeToString(h.Sum(nil))
	if h, err = prev.tail.hash(); err != nil {
		return id, v, tc, false
	}
	h.Write(app)
	oldSHA := hex.EncodeToString(h.Sum(nil))
	if !fsio.StillSame(f, id) {
		return id, v, tc, false
	}
	st := prev.tail.extend(kept) // nil when the result holds a blank line: no cut planned from it later
	tc = TornCut{Keep: k.s, Fig: k.fig, OldSHA: oldSHA, KeepSHA: keepSHA, kept: st}
	if st != nil {
		tc.Lines = st.lines
	}
	if pass := prev.tail.pass; pass != nil {
		// The result's judge goes on from the state the pass over the remembered bytes
		// left: the result starts with them (KeepsFirst, above). The entry still holds
		// it: the caller that judges the result drops the entry first (see JudgeResult).
		tc.from = &Front{st: *pass}
	}
	return id, fault.verdict(prev.tail.lines + line), tc, true
}
