package heal

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"syscall"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
	"github.com/sessionmedic/sessionmedic/policy"
)

// Big files (DESIGN §10: memory stays bounded whatever the file's size). A damaged generic JSON
// or JSONL file larger than bigFile is judged, planned and healed from the file itself, never
// held in memory: its salvage is described as the bytes of the original it keeps (a JSON
// document's first value, a JSONL file's valid lines, the bytes after a byte order mark), and
// every step of the heal protocol that needs those bytes — the quarantine copy, the hashes of
// the journal, the temp file, the put-back of an app's late write, the verification — streams
// them from the original's descriptor. The result is byte for byte what the in-memory plan
// would write. Candidates from elsewhere (a backup, the last-good copy, itself bounded by
// last_good.max_file_bytes) stay in memory; the salvage+last-good union is not planned for a
// big file (it would index every record of the file).
const bigFile = 8 << 20

// errNoStream: the file cannot be judged streaming (a record or token over maxLine); the
// caller falls back to reading it whole.
var errNoStream = errors.New("cannot be judged streaming")

// bigAbove is the size above which a file is planned streaming.
func (e *Engine) bigAbove() int64 {
	if e.bigThreshold > 0 {
		return e.bigThreshold
	}
	return bigFile
}

// bigEligible: the types whose whole checklist is the syntax (and, for JSONL, one record per
// line), so a streaming pass judges them exactly as inspectBytes does.
func bigEligible(t fileType) bool { return t == ftJSON || t == ftJSONL }

// openStable opens the regular file at path (not following a final symlink) and checks that
// it is still the version id names.
func openStable(path string, id Identity) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fsio.ErrNotRegular
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || !fsio.IdentityOf(fi).Same(id) {
		f.Close()
		return nil, fsio.ErrChanged
	}
	return f, nil
}

// stillSame reports whether the open file is still the version id names.
func stillSame(f *os.File, id Identity) bool {
	fi, err := f.Stat()
	return err == nil && fsio.IdentityOf(fi).Same(id)
}

// streamVerdict judges bytes [off, size) of f as inspectBytes judges them (without a last-good
// copy) for a big-eligible type. firstEnd is, for JSON, the end of the first complete value
// (relative to off) when the damage is trailing garbage, else -1.
func streamVerdict(f io.ReaderAt, off, size int64, t fileType) (v Verdict, firstEnd int64, err error) {
	n := size - off
	if n == 0 {
		if t.emptyIsDamage() {
			return damaged(KindEmpty, 0, "file is empty"), -1, nil
		}
		return healthy(), -1, nil
	}
	head := make([]byte, min(n, 3))
	if _, err := f.ReadAt(head, off); err != nil {
		return Verdict{}, -1, err
	}
	if head[0] == 0 {
		all, err := allNULAt(f, off, n)
		if err != nil {
			return Verdict{}, -1, err
		}
		if all {
			return damaged(KindNULFilled, 0, "file is %d NUL bytes", n), -1, nil
		}
	}
	if bytes.HasPrefix(head, bom) {
		return damaged(KindBOM, 0, "file starts with a UTF-8 byte order mark"), -1, nil
	}
	sr := io.NewSectionReader(f, off, n)
	if t.jsonl() {
		v := healthy()
		line := 0
		err := eachLine(sr, func(start int64, l []byte, terminated bool) error {
			line++
			body := bytes.TrimSuffix(l, []byte("\r"))
			trimmed := bytes.TrimSpace(body)
			if len(trimmed) == 0 {
				return nil
			}
			lerr := jsonv.Valid(body, t.dialect())
			if lerr == nil && trimmed[0] != '{' {
				lerr = errNotObject
			}
			switch {
			case lerr != nil && !terminated:
				v = damaged(KindTruncated, start, "torn last line %d: %v", line, lerr)
			case lerr != nil:
				if e, ok := lerr.(*jsonv.Error); ok && e.Kind == jsonv.ErrInvalidUTF8 {
					v = damaged(KindInvalidUTF8, start+e.Offset, "line %d: %s", line, e.Msg)
				} else {
					v = damaged(KindMalformedRecord, start, "line %d: %v", line, lerr)
				}
			case !terminated:
				v = damaged(KindTruncated, n, "last line %d has no terminating newline", line)
			default:
				return nil
			}
			return errStop
		})
		if err != nil && err != errStop {
			return Verdict{}, -1, err
		}
		return v, -1, nil
	}
	end, err := jsonv.ValidReader(sr, t.dialect(), streamBuf, maxLine)
	if errors.Is(err, jsonv.ErrTokenTooLong) {
		return Verdict{}, -1, errNoStream
	}
	var je *jsonv.Error
	if err != nil && !errors.As(err, &je) {
		return Verdict{}, -1, err
	}
	if err == nil {
		return healthy(), -1, nil
	}
	if je.Kind == jsonv.ErrTrailing {
		firstEnd = end
	} else {
		firstEnd = -1
	}
	return syntaxVerdict(err, 0), firstEnd, nil
}

var errStop = errors.New("stop")

func allNULAt(f io.ReaderAt, off, n int64) (bool, error) {
	buf := make([]byte, min(n, streamBuf))
	for pos := int64(0); pos < n; {
		k, err := f.ReadAt(buf[:min(int64(len(buf)), n-pos)], off+pos)
		if k > 0 && !allNUL(buf[:k]) {
			return false, nil
		}
		pos += int64(k)
		if err != nil && !(err == io.EOF && pos == n) {
			return false, err
		}
	}
	return true, nil
}

// eachLine calls fn for each line of r as jsonv.Lines does (start is the line's offset; the
// '\n' is not part of line). A line longer than maxLine is errNoStream.
func eachLine(r io.Reader, fn func(start int64, line []byte, terminated bool) error) error {
	br := bufio.NewReaderSize(r, streamBuf)
	var off int64
	var long []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			if len(long)+len(chunk) > maxLine {
				return errNoStream
			}
			long = append(long, chunk...)
			continue
		}
		line := chunk
		if long != nil {
			line = append(long, chunk...)
			long = nil
		}
		if len(line) > 0 {
			terminated := line[len(line)-1] == '\n'
			body := line
			if terminated {
				body = line[:len(line)-1]
			}
			if ferr := fn(off, body, terminated); ferr != nil {
				return ferr
			}
			off += int64(len(line))
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// inspectBig judges a big-eligible file over the big size streaming. done is false when the
// caller is to go on with its own reading: the file is small, not there, not regular, over
// max_file_size, cannot be judged streaming, or is healthy and wanted whole (for its last-good
// copy, or for the JSONL checks against that copy).
// wholeLimit is the largest plain JSON or JSONL file read whole: a healthy one needs its
// bytes up to there (JSONL: the line-aligned prefix check against last-good; JSON: its
// last-good copy), and a larger one is judged streaming.
func (e *Engine) wholeLimit(r *policy.Rule, typ fileType) int64 {
	if typ.jsonl() {
		return streamThreshold
	}
	if lg := e.LastGood.MaxFileBytes; r.KeepLastGood && r.Mode != policy.ModeObserve {
		if lg == 0 {
			return planLimit
		}
		return min(lg, planLimit)
	}
	return e.bigAbove()
}

func (e *Engine) inspectBig(t Target, in *inspection) (done bool) {
	st, err := fsio.StatIdentity(t.Path)
	maxSize := t.Rule.Limits.MaxFileSize
	if err != nil || st.Size <= e.bigAbove() || (maxSize > 0 && st.Size > maxSize) {
		return false
	}
	f, err := os.OpenFile(t.Path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	id := fsio.IdentityOf(fi)
	if id.Size <= e.bigAbove() || (maxSize > 0 && id.Size > maxSize) {
		return false
	}
	v, firstEnd, err := streamVerdict(f, 0, id.Size, in.ctx.typ)
	if err != nil {
		return false
	}
	if !stillSame(f, id) {
		in.verdict = busy("file changed while it was read")
		return true
	}
	if v.Status == Healthy {
		if in.ctx.typ.jsonl() {
			if id.Size <= streamThreshold {
				return false // read whole: the line-aligned prefix check against last-good
			}
			if !e.oneShot {
				e.inc.rememberFile(t.Path, in.ctx.typ, id)
			}
		} else if lg := e.LastGood.MaxFileBytes; t.Rule.KeepLastGood && t.Rule.Mode != policy.ModeObserve && (lg == 0 || id.Size <= lg) && id.Size <= planLimit {
			return false // read whole for the last-good copy
		}
		in.id, in.verdict, in.incremental = id, v, true // no bytes held
		if appendOnly(in.ctx.typ) {
			e.inc.full.Add(1)
		}
		return true
	}
	if appendOnly(in.ctx.typ) {
		e.inc.full.Add(1)
	}
	e.inc.drop(t.Path)
	in.id, in.verdict, in.big, in.bigEnd = id, v, true, firstEnd
	return true
}

// What a temp file receives (an fsio.Content): bytes in memory, or bytes of the original.

// memContent is content held in memory.
type memContent []byte

// Its hash is not computed ("": the bytes are the plan's own).
func (c memContent) WriteOut(w io.Writer, _ io.ReaderAt) (string, error) {
	_, err := w.Write(c)
	return "", err
}

// rangeContent is the bytes [off, off+n) of the original.
type rangeContent struct{ off, n int64 }

func (c rangeContent) WriteOut(w io.Writer, src io.ReaderAt) (string, error) {
	h := sha256.New()
	n, err := io.CopyBuffer(io.MultiWriter(w, h), io.NewSectionReader(src, c.off, c.n), make([]byte, streamBuf))
	if err != nil {
		return "", err
	}
	if n != c.n {
		return "", io.ErrUnexpectedEOF
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// validLines is the JSONL salvage of the original of the given size: each valid record line,
// byte for byte, ended by '\n'.
type validLines struct {
	typ  fileType
	size int64
}

func (c validLines) WriteOut(w io.Writer, src io.ReaderAt) (string, error) {
	h := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(w, h), streamBuf)
	err := eachLine(io.NewSectionReader(src, 0, c.size), func(_ int64, line []byte, _ bool) error {
		if !validRecord(c.typ, line) {
			return nil
		}
		if _, err := bw.Write(line); err != nil {
			return err
		}
		return bw.WriteByte('\n')
	})
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// validRecord: a line splitJSONL gives a value (a valid object record).
func validRecord(t fileType, line []byte) bool {
	body := bytes.TrimSuffix(line, []byte("\r"))
	trimmed := bytes.TrimSpace(body)
	return len(trimmed) > 0 && trimmed[0] == '{' && jsonv.Valid(body, t.dialect()) == nil
}

// bigEdit is the part of an edit of a big file that stands for its bytes.
type bigEdit struct {
	src     fsio.Content // the new bytes; data is nil unless src is memContent
	oldSHA  string
	newSHA  string
	newSize int64
	prefix  bool // the new bytes are a prefix of the old: a tail cut
}

func (ed *edit) oldSize() int64 {
	if ed.big != nil {
		return ed.oldID.Size
	}
	return int64(len(ed.old))
}

func (ed *edit) newSHA() string {
	if ed.big != nil {
		return ed.big.newSHA
	}
	return sha(ed.data)
}

func (ed *edit) oldSHA() string {
	if ed.big != nil {
		return ed.big.oldSHA
	}
	return sha(ed.old)
}

func (ed *edit) newSize() int64 {
	if ed.big != nil {
		return ed.big.newSize
	}
	return int64(len(ed.data))
}

// tailCut: the new bytes are the old ones cut short (allowed in place beside a writer).
func (ed *edit) tailCut() bool {
	if ed.big != nil {
		return ed.big.prefix
	}
	return bytes.HasPrefix(ed.old, ed.data)
}

func (ed *edit) content() fsio.Content {
	if ed.big != nil {
		return ed.big.src
	}
	return memContent(ed.data)
}

// survey accumulates, in one pass over the original, what the plans of a big file need: the
// hash of the old bytes, and for each candidate the hash of its bytes (ranges of the old ones)
// or how much of the old bytes it keeps (candidates in memory).
type prefixMatch struct {
	data []byte
	n    int64 // common prefix so far
	done bool
}

func (m *prefixMatch) Write(p []byte) (int, error) {
	if m.done {
		return len(p), nil
	}
	rest := m.data[min(int64(len(m.data)), m.n):]
	k := commonPrefix(p, rest)
	m.n += int64(k)
	if k < len(p) {
		m.done = true
	}
	return len(p), nil
}

// rangeHash hashes the bytes [from, to) of the stream written to it.
type rangeHash struct {
	from, to, pos int64
	h             hash.Hash
}

func newRangeHash(from, to int64) *rangeHash {
	return &rangeHash{from: from, to: to, h: sha256.New()}
}

func (r *rangeHash) Write(p []byte) (int, error) {
	lo, hi := max(r.from-r.pos, 0), min(r.to-r.pos, int64(len(p)))
	if lo < hi {
		r.h.Write(p[lo:hi])
	}
	r.pos += int64(len(p))
	return len(p), nil
}

func (r *rangeHash) sum() string { return hex.EncodeToString(r.h.Sum(nil)) }

// firstNonWS records the first byte after offset from that is not JSON whitespace.
type firstNonWS struct {
	from, pos int64
	c         byte
	found     bool
}

func (f *firstNonWS) Write(p []byte) (int, error) {
	for i := max(f.from-f.pos, 0); !f.found && i < int64(len(p)); i++ {
		if c := p[i]; c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			f.c, f.found = p[i], true
		}
	}
	f.pos += int64(len(p))
	return len(p), nil
}

// memCand is a candidate held in memory (a backup, the last-good copy).
type memCand struct {
	strategy policy.Strategy
	data     []byte
	prefix   *prefixMatch
	kept     map[string]bool // JSONL: its records
	lost     int
	lostB    int64
}

// makeBigPlans is makePlans for a big file: the same strategies in the same order, with the
// same results, except that salvage+last-good is not offered.
func (e *Engine) makeBigPlans(rule *policy.Rule, in *inspection) ([]*plan, error) {
	c := &in.ctx
	crossFile := in.verdict.Kind == KindDanglingReference || in.verdict.Kind == KindStaleLiveRecords || in.verdict.Kind == KindMetadataLag
	var cands []*memCand
	for _, s := range rule.Strategies {
		if crossFile && (s == "backup" || s == "last-good") {
			continue
		}
		var data []byte
		switch s {
		case policy.Backup:
			data = fromBackup(rule, c)
		case policy.LastGoodCopy:
			if lg := c.lastGood; lg != nil && candidateOK(c, lg) {
				data = lg
			}
		}
		if data != nil {
			mc := &memCand{strategy: s, data: data, prefix: &prefixMatch{data: data}}
			if c.typ.jsonl() {
				mc.kept = map[string]bool{}
				for _, l := range splitJSONL(data, c.typ) {
					mc.kept[string(bytes.TrimRight(l.raw, "\r"))] = true
				}
			}
			cands = append(cands, mc)
		}
	}
	f, err := openStable(in.ctx.path, in.id)
	if err != nil {
		if errors.Is(err, fsio.ErrChanged) {
			return nil, busyErr("%s changed since it was read", in.ctx.path)
		}
		return nil, err
	}
	defer f.Close()
	size := in.id.Size
	// The BOM-less bytes, when the file starts with a byte order mark (normalize).
	var bomLess bool
	if in.verdict.Kind == KindBOM {
		v, _, err := streamVerdict(f, 3, size, c.typ)
		if err != nil {
			return nil, err
		}
		bomLess = v.Status == Healthy
	}
	oldH := sha256.New()
	ws := []io.Writer{oldH}
	for _, mc := range cands {
		ws = append(ws, mc.prefix)
	}
	normH := newRangeHash(3, size)
	normFirst := &firstNonWS{from: 3}
	if bomLess {
		ws = append(ws, normH, normFirst)
	}
	var salvH *rangeHash
	salvFirst := &firstNonWS{}
	if !c.typ.jsonl() && in.bigEnd > 0 {
		salvH = newRangeHash(0, in.bigEnd)
		ws = append(ws, salvH, salvFirst)
	}
	// JSONL: the salvage's lines, and each line's fate in every candidate.
	var (
		total, salvKeep, salvLost int
		salvLostB, salvSize       int64
		salvPrefix                = true
		droppedBefore             bool
		torn                      []byte // an unterminated invalid last line
		tornLen                   int64
		line1Blank                bool
		salvLines                 = sha256.New()
	)
	r := io.TeeReader(io.NewSectionReader(f, 0, size), io.MultiWriter(ws...))
	if c.typ.jsonl() {
		err = eachLine(r, func(start int64, line []byte, terminated bool) error {
			ll := int64(len(line))
			if terminated {
				ll++
			}
			if start == 0 && len(line) >= 3 {
				line1Blank = len(bytes.TrimSpace(bytes.TrimSuffix(line[3:], []byte("\r")))) == 0
			}
			valid := validRecord(c.typ, line)
			if valid {
				salvKeep++
				salvSize += int64(len(line)) + 1
				salvLines.Write(line)
				salvLines.Write([]byte{'\n'})
				if droppedBefore || !terminated {
					salvPrefix = false
				}
			} else {
				droppedBefore = true
			}
			body := bytes.TrimSuffix(line, []byte("\r"))
			if len(bytes.TrimSpace(body)) == 0 {
				return nil
			}
			total++
			if !valid {
				salvLost++
				salvLostB += ll
				if !terminated {
					torn, tornLen = bytes.Clone(line), ll
				}
			}
			key := string(bytes.TrimRight(line, "\r"))
			for _, mc := range cands {
				if mc.kept[key] || (!valid && !terminated && bytes.Contains(mc.data, line)) {
					continue
				}
				mc.lost++
				mc.lostB += ll
			}
			return nil
		})
	} else {
		_, err = io.CopyBuffer(io.Discard, r, make([]byte, streamBuf))
	}
	if errors.Is(err, errNoStream) {
		return nil, fmt.Errorf("%s: a record is over %d bytes: not repaired streaming", in.ctx.path, maxLine)
	}
	if err != nil {
		return nil, err
	}
	if !stillSame(f, in.id) {
		return nil, busyErr("%s changed since it was read", in.ctx.path)
	}
	oldSHA := hex.EncodeToString(oldH.Sum(nil))
	// A torn last record whose whole version the salvage holds is not lost.
	if torn != nil && salvKeep > 0 {
		cw := &containsWriter{needle: torn}
		if _, err := (validLines{typ: c.typ, size: size}).WriteOut(cw, f); err != nil {
			return nil, err
		}
		if cw.found {
			salvLost--
			salvLostB -= tornLen
		}
	}
	bigPlan := func(s policy.Strategy, src fsio.Content, newSHA string, newSize int64, prefix bool) *plan {
		return &plan{strategy: s, edits: []edit{{path: c.path, oldID: in.id,
			big: &bigEdit{src: src, oldSHA: oldSHA, newSHA: newSHA, newSize: newSize, prefix: prefix}}}}
	}
	var out []*plan
	for _, s := range rule.Strategies {
		if crossFile && (s == "backup" || s == "last-good") {
			continue
		}
		var p *plan
		switch s {
		case policy.Salvage:
			if c.typ.jsonl() && salvKeep > 0 {
				p = bigPlan(s, validLines{typ: c.typ, size: size}, hex.EncodeToString(salvLines.Sum(nil)), salvSize, salvPrefix)
				p.keep, p.total, p.lostRecords, p.lostBytes = salvKeep, total, salvLost, salvLostB
			} else if salvH != nil {
				p = bigPlan(s, rangeContent{0, in.bigEnd}, salvH.sum(), in.bigEnd, true)
				p.keep = jsonRecords(salvFirst)
				p.lostBytes = size - in.bigEnd
			}
		case policy.Normalize:
			if bomLess {
				p = bigPlan(s, rangeContent{3, size - 3}, normH.sum(), size-3, false)
				p.lostBytes = 3
				if c.typ.jsonl() {
					p.total, p.lostRecords, p.keep = total, 1, total-1
					if !line1Blank {
						p.keep++
					}
				} else {
					p.keep = jsonRecords(normFirst)
				}
			}
		case policy.Backup, policy.LastGoodCopy:
			for _, mc := range cands {
				if mc.strategy != s {
					continue
				}
				p = bigPlan(s, memContent(mc.data), sha(mc.data), int64(len(mc.data)), mc.prefix.n == int64(len(mc.data)))
				p.edits[0].data = mc.data
				p.keep = records(c.typ, mc.data)
				if c.typ.jsonl() {
					p.total, p.lostRecords, p.lostBytes = total, mc.lost, mc.lostB
				} else {
					// The damaged document does not parse: it holds no record to lose.
					p.lostBytes = max(size-mc.prefix.n, 0)
				}
			}
		}
		if p != nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// jsonRecords is records() for a valid generic JSON document whose first byte is known.
func jsonRecords(f *firstNonWS) int {
	if f.found && f.c == '{' {
		return 1
	}
	return 0
}

// containsWriter reports whether needle occurs in what is written to it.
type containsWriter struct {
	needle []byte
	carry  []byte
	found  bool
}

func (c *containsWriter) Write(p []byte) (int, error) {
	if c.found {
		return len(p), nil
	}
	buf := append(c.carry, p...)
	if bytes.Contains(buf, c.needle) {
		c.found = true
		c.carry = nil
		return len(p), nil
	}
	keep := min(len(buf), len(c.needle)-1)
	c.carry = append(c.carry[:0], buf[len(buf)-keep:]...)
	return len(p), nil
}

// shaFile is the sha256 of the regular file at path, read streaming, with the file's identity
// checked around the read.
func shaFile(path string) (string, error) {
	st, err := fsio.StatIdentity(path)
	if err != nil {
		return "", err
	}
	f, err := openStable(path, st)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.CopyBuffer(h, io.NewSectionReader(f, 0, st.Size), make([]byte, streamBuf)); err != nil {
		return "", err
	}
	if !stillSame(f, st) {
		return "", fsio.ErrChanged
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// plans asks the rule's strategies for a repair, from the bytes read or, for a big file, from
// the file itself.
func (e *Engine) plans(rule *policy.Rule, in *inspection) ([]*plan, error) {
	if in.big {
		return e.makeBigPlans(rule, in)
	}
	return makePlans(rule, in), nil
}
