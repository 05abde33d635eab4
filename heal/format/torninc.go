package format

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"os"
	"sync"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/internal/panics"
)

// Tail cuts planned from the incremental state. A big append-only log whose app was cut
// off mid-record (a torn last line) is healed by cutting that line off in place; planned from
// the file (InspectTorn), the cut costs a pass over it: the checklist's judge of the bytes
// before the torn line, with their sha256 and the whole file's (the quarantine's and the
// journal's sums) on the side. The daemon has judged those bytes already, a version and an
// append at a time (AppendCache): where it also kept their sha256 state and their line
// count (tailState), the cut is planned from that and the appended bytes alone.

// tailState is what an AppendCache entry knows of the bytes it judged healthy: the state of
// their sha256 (fsio.SHA256State) and how many lines they hold, none blank. An
// entry without one (nil) plans no cut.
type tailState struct {
	sha   []byte
	lines int
	// pass is the checklist's state at the end of those bytes, where the pass that judged
	// them left it (nil: not kept), holding held bytes. Its sequence goes on once only:
	// whoever takes it for a judge (takePass) owns it.
	pass *passState
	held int
}

// keepEnd gives st (its own, not yet shared) the checklist's state end's pass left at the
// end of st's bytes, size of them: none when end is not such an end (nil, a damaged line's,
// spent, elsewhere, after a blank line, or of other lines). end is then spent.
func (st *tailState) keepEnd(end *Front, size int64) {
	if !end.End() || end.spent || end.st.off != size || end.st.lines != st.lines || end.st.blank {
		st.keep(nil)
		return
	}
	end.spent = true
	pass := end.st
	st.keep(&pass)
}

// keep gives st (its own, not yet shared) the checklist's state pass (nil: none).
func (st *tailState) keep(pass *passState) {
	st.pass, st.held = pass, 0
	if pass == nil {
		return
	}
	if h, ok := pass.seq.(HeldSequence); ok {
		st.held = h.Held()
	} else {
		st.held = pass.records * keptRecordBytes
	}
	st.held = max(st.held, 1)
}

// newTailState is the tailState of the size bytes of r (lines of profile p): nil when a line
// is blank or cannot be judged streaming, or the bytes do not end with a '\n'. A line over
// LineWindow is walked from r, never held.
func newTailState(p Profile, r io.ReaderAt, size int64) (*tailState, error) {
	h := sha256.New()
	ta := &teeAt{r: io.NewSectionReader(r, 0, size), w: h}
	lines, blank, open := 0, false, false
	lj := &longJudge{r: rulesOf(p), window: lineWindow}
	err := readWalker(ta, size, min(StreamBuf, lineWindow), MaxLine, lj)(0, size, false,
		func(_ int64, line []byte, terminated bool, long *longLine) error {
			if long != nil && long.blank || long == nil && blankLine(line) {
				blank = true
				return Stop
			}
			lines++
			open = !terminated
			return nil
		})
	if err == nil {
		err = ta.through(size)
	}
	switch {
	case errors.Is(err, ErrNoStream) || err == Stop || blank || open:
		return nil, nil
	case err != nil:
		return nil, err
	}
	return stateOf(h, lines), nil
}

// extend is st with b appended: nil when b holds a blank line, or ends without a '\n'.
func (st *tailState) extend(b []byte) *tailState {
	if st == nil || len(b) > 0 && b[len(b)-1] != '\n' {
		return nil
	}
	h, err := st.hash()
	if err != nil {
		return nil
	}
	n, ok := countLines(b)
	if !ok {
		return nil
	}
	h.Write(b)
	return stateOf(h, st.lines+n)
}

func (st *tailState) hash() (hash.Hash, error) { return fsio.ResumeSHA256(st.sha) }

func stateOf(h hash.Hash, lines int) *tailState {
	b, err := fsio.SHA256State(h)
	if err != nil {
		return nil
	}
	return &tailState{sha: b, lines: lines}
}

// countLines is how many lines the terminated lines b holds; ok is false when one is blank.
func countLines(b []byte) (n int, ok bool) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if blankLine(b[:i]) {
			return n, false
		}
		n++
		b = b[i+1:]
	}
	return n, true
}

// RememberTail is RememberFile that also keeps the tailState of the version id of the file
// (a pass over it: its sha256 and its lines), from which a torn tail appended to it later is
// planned without a pass (TryTorn).
//
// end, when set, is the end Front the pass that judged that version healthy left (format's
// StreamInspectFront): kept with it, a salvage of damage appended later has its result
// judged from there (TrySalvage), and each append the daemon accepts carries it on.
func (c *AppendCache) RememberTail(path string, t Profile, id fsio.Identity, end *Front) {
	c.RememberFile(path, t, id)
	if !tornCuttable(t) {
		return
	}
	f, err := fsio.OpenStable(path, id)
	if err != nil {
		return // remembered without: a torn tail is cut from the file
	}
	defer f.Close()
	if st, err := newTailState(t, f, id.Size); err == nil && st != nil && fsio.StillSame(f, id) {
		if salvagedFromState(t) {
			st.keepEnd(end, id.Size)
		}
		c.setTail(path, id, st)
	}
}

// salvagedFromState: TrySalvage plans p's salvages of appended damage (its result judged by
// its caller, which a kept state serves).
func salvagedFromState(p Profile) bool {
	_, fin := p.(SalvageFinisher)
	return !fin && tornCuttable(p)
}

// takePass takes the checklist's state out of the entry of path, when it is of the version
// prev (the caller then owns it: its sequence goes on once).
func (c *AppendCache) takePass(path string, prev incEntry) *passState {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[path]
	if !ok || e.dev != prev.dev || e.ino != prev.ino || e.size != prev.size || e.tail == nil || e.tail.pass == nil {
		return nil
	}
	pass := e.tail.pass
	e.tail = e.tail.withoutPass()
	c.store(path, e)
	return pass
}

// withoutPass is st without its checklist's state (a copy: tailStates are shared).
func (st *tailState) withoutPass() *tailState {
	if st == nil || st.pass == nil {
		return st
	}
	t := *st
	t.keep(nil)
	return &t
}

// judged is st (owned by the caller) carried over the records of b, the bytes of the file at
// base on, which the daemon accepted as appended to the ones st ends: the end Front of that
// walk, nil when b's records leave the checklist anything but healthy (a problem the
// incremental pass does not judge, the full pass will) or st does not end at base.
func (st *passState) judged(p Profile, b []byte, base int64) *Front {
	if st == nil || st.off != base {
		return nil
	}
	walk := memWalker(b)
	v, end := judgeRecordsFrom(p, st, func(fn lineFunc) error {
		return walk(0, int64(len(b)), false, func(start int64, line []byte, terminated bool, long *longLine) error {
			return fn(base+start, line, terminated, long)
		})
	})
	if v.Status != Healthy {
		return nil
	}
	return end
}

// RememberCut is RememberFile of the version a cut planned by TryTorn, or a salvage planned by
// TrySalvage, left (id): its tailState is the one of the bytes it kept.
func (c *AppendCache) RememberCut(path string, t Profile, id fsio.Identity, tc *TornCut) {
	c.RememberFile(path, t, id)
	if tc.kept != nil && tc.Keep.Size() == id.Size {
		c.setTail(path, id, tc.kept)
	}
}

// setTail sets the tailState of path's entry, when it is of the version id.
func (c *AppendCache) setTail(path string, id fsio.Identity, st *tailState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[path]; ok && e.dev == id.Dev && e.ino == id.Ino && e.size == id.Size {
		e.tail = st
		c.store(path, e)
	}
}

// appendedBytes opens the file at path when the cache holds it with its tailState and it is
// that version with up to StreamBuf bytes appended (see appended), and reads those bytes. The
// caller closes f when ok.
func (c *AppendCache) appendedBytes(path string, maxSize int64) (prev incEntry, f *os.File, id fsio.Identity, app []byte, ok bool) {
	if prev, found := c.get(path); !found || prev.tail == nil {
		return prev, nil, id, nil, false // (before the file is opened)
	}
	prev, f, id, ok = c.appended(path, maxSize)
	if !ok {
		return prev, nil, id, nil, false
	}
	grown := id.Size - prev.size
	if prev.size == 0 || grown <= 0 || grown > StreamBuf {
		f.Close()
		return prev, nil, id, nil, false
	}
	app = make([]byte, grown)
	if n, _ := f.ReadAt(app, prev.size); int64(n) != grown {
		f.Close()
		return prev, nil, id, nil, false
	}
	return prev, f, id, app, true
}

// frontPasses: what is judged of f before any record (a skip: an app's era that keeps these
// files no more), judged again of its first x bytes as the pass over the file judges it,
// lets the records be judged.
func frontPasses(p Profile, path string, f io.ReaderAt, x int64) bool {
	front := make([]byte, min(x, 64<<10))
	if _, err := f.ReadAt(front, 0); err != nil && err != io.EOF {
		return false
	}
	_, done, err := judgeFront(p, File{Path: path}, front, x, func() (bool, error) { return AllNULAt(f, 0, x) })
	return !done && err == nil
}

// tornCuttable: p's torn last line is cut as PlanTornCut plans it, and its cut can be
// planned from an AppendCache entry: a record-by-record checklist (the verdict of the bytes
// before the torn line is the entry's), no records kept elsewhere, no repeated lines dropped.
func tornCuttable(p Profile) bool {
	_, seq := p.(SequenceChecker)
	return seq && p.AppendOnly() && keepsAsIs(p)
}

// keepsAsIs: p's salvage keeps every record as it is, wherever it is (none dropped as kept
// elsewhere, or as a repeat of another).
func keepsAsIs(p Profile) bool {
	if _, ok := p.(Superseder); ok {
		return false
	}
	d, ok := p.(DuplicateDropper)
	return !ok || !d.DropsDuplicateLines()
}

// TryTorn plans the cut of a torn last line appended to a file the cache holds with its
// tailState (see RememberTail), as InspectTorn plans it from the file, from that state and
// the appended bytes: the file is the remembered version with lines appended that the
// incremental pass accepts (TryIncremental's test), the last of them torn. It reads the
// appended bytes, the windows the incremental pass compares, and searches the bytes before
// the torn line for its whole version (as PlanTornCut's walk does, on both CPUs). ok is
// false, nothing planned, for any other file: it is judged the usual way.
func (c *AppendCache) TryTorn(path string, p Profile, maxSize int64) (id fsio.Identity, v Verdict, tc TornCut, ok bool) {
	if !tornCuttable(p) {
		return id, v, tc, false
	}
	prev, f, id, app, ok := c.appendedBytes(path, maxSize)
	if !ok {
		return id, v, tc, false
	}
	defer f.Close()
	if app[len(app)-1] == '\n' {
		return id, v, tc, false
	}
	i := bytes.LastIndexByte(app, '\n')
	body, torn := app[:i+1], app[i+1:]
	x := prev.size + int64(i) + 1
	if id.Size-x >= int64(lineWindow)/2 || ValidRecord(p, torn) || blankLine(torn) || !AppendedValid(p, body) {
		return id, v, tc, false
	}
	kept := prev.tail.extend(body)
	if kept == nil {
		return id, v, tc, false
	}
	h, err := kept.hash()
	if err != nil {
		return id, v, tc, false
	}
	keepSHA := hex.EncodeToString(h.Sum(nil))
	h.Write(torn)
	oldSHA := hex.EncodeToString(h.Sum(nil))
	_, _, fault := judgeLine(rulesOf(p), x, torn, false)
	if fault == nil {
		return id, v, tc, false
	}
	if !frontPasses(p, path, f, x) {
		return id, v, tc, false
	}
	found, err := containsAt(f, x, torn)
	if err != nil {
		return id, v, tc, false
	}
	keep, fig, cut, err := tornKeep(p, path, f, x, kept.lines, torn, found)
	if err != nil || !cut {
		return id, v, tc, false
	}
	if fi, err := f.Stat(); err != nil || !fsio.IdentityOf(fi).Same(id) {
		return id, v, tc, false
	}
	if pass := c.takePass(path, prev); pass != nil {
		kept.keepEnd(pass.judged(p, body, prev.size), x) // kept is extend's own
	}
	tc = TornCut{Keep: keep, Fig: fig, OldSHA: oldSHA, Verdict: OK(), KeepSHA: keepSHA, Lines: kept.lines, kept: kept}
	return id, fault.verdict(kept.lines + 1), tc, true
}

// containsAt: the n first bytes of r hold needle. The two halves are searched at once.
func containsAt(r io.ReaderAt, n int64, needle []byte) (bool, error) {
	mid := n / 2
	var wg sync.WaitGroup
	var found [2]bool
	var errs [2]error
	var caught panics.Slot
	for j, part := range [2][2]int64{{0, min(n, mid+int64(len(needle))-1)}, {mid, n}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer caught.Capture()
			cw := &fsio.ContainsWriter{Needle: needle}
			_, errs[j] = io.CopyBuffer(cw, io.NewSectionReader(r, part[0], part[1]-part[0]), make([]byte, 256<<10))
			found[j] = cw.Found
		}()
	}
	wg.Wait()
	caught.Rethrow()
	if errs[0] != nil {
		return false, errs[0]
	}
	return found[0] || found[1], errs[1]
}
