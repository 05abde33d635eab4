package heal

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/policy"
)

// memCand is a candidate held in memory (a backup, the last-good copy).
type memCand struct {
	strategy policy.Strategy
	data     []byte
	prefix   *fsio.PrefixMatch
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
			mc := &memCand{strategy: s, data: data, prefix: &fsio.PrefixMatch{Data: data}}
			if c.typ.JSONL() {
				mc.kept = map[string]bool{}
				for _, l := range splitJSONL(data, c.typ) {
					mc.kept[string(bytes.TrimRight(l.Raw, "\r"))] = true
				}
			}
			cands = append(cands, mc)
		}
	}
	f, err := fsio.OpenStable(in.ctx.path, in.id)
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
		v, _, err := format.StreamVerdict(f, 3, size, c.typ)
		if err != nil {
			return nil, err
		}
		bomLess = v.Status == Healthy
	}
	// One pass over the original accumulates what the plans need: the hash of the old bytes,
	// and for each candidate the hash of its bytes (ranges of the old ones) or how much of the
	// old bytes it keeps (candidates in memory).
	oldH := sha256.New()
	ws := []io.Writer{oldH}
	for _, mc := range cands {
		ws = append(ws, mc.prefix)
	}
	normH := fsio.NewRangeHash(3, size)
	normFirst := &fsio.FirstNonWS{From: 3}
	if bomLess {
		ws = append(ws, normH, normFirst)
	}
	var salvH *fsio.RangeHash
	salvFirst := &fsio.FirstNonWS{}
	if !c.typ.JSONL() && in.bigEnd > 0 {
		salvH = fsio.NewRangeHash(0, in.bigEnd)
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
	if c.typ.JSONL() {
		err = format.EachLine(r, func(start int64, line []byte, terminated bool) error {
			ll := int64(len(line))
			if terminated {
				ll++
			}
			if start == 0 && len(line) >= 3 {
				line1Blank = len(bytes.TrimSpace(bytes.TrimSuffix(line[3:], []byte("\r")))) == 0
			}
			valid := format.ValidRecord(c.typ, line)
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
	if errors.Is(err, format.ErrNoStream) {
		return nil, fmt.Errorf("%s: a record is over %d bytes: not repaired streaming", in.ctx.path, maxLine)
	}
	if err != nil {
		return nil, err
	}
	if !fsio.StillSame(f, in.id) {
		return nil, busyErr("%s changed since it was read", in.ctx.path)
	}
	oldSHA := hex.EncodeToString(oldH.Sum(nil))
	// A torn last record whose whole version the salvage holds is not lost.
	if torn != nil && salvKeep > 0 {
		cw := &fsio.ContainsWriter{Needle: torn}
		if _, err := (format.ValidLines{Profile: c.typ, Size: size}).WriteOut(cw, f); err != nil {
			return nil, err
		}
		if cw.Found {
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
			if c.typ.JSONL() && salvKeep > 0 {
				p = bigPlan(s, format.ValidLines{Profile: c.typ, Size: size}, hex.EncodeToString(salvLines.Sum(nil)), salvSize, salvPrefix)
				p.keep, p.total, p.lostRecords, p.lostBytes = salvKeep, total, salvLost, salvLostB
			} else if salvH != nil {
				p = bigPlan(s, fsio.Range{Off: 0, N: in.bigEnd}, salvH.Sum(), in.bigEnd, true)
				p.keep = jsonRecords(salvFirst)
				p.lostBytes = size - in.bigEnd
			}
		case policy.Normalize:
			if bomLess {
				p = bigPlan(s, fsio.Range{Off: 3, N: size - 3}, normH.Sum(), size-3, false)
				p.lostBytes = 3
				if c.typ.JSONL() {
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
				p = bigPlan(s, fsio.Bytes(mc.data), sha(mc.data), int64(len(mc.data)), mc.prefix.N == int64(len(mc.data)))
				p.edits[0].data = mc.data
				p.keep = records(c.typ, mc.data)
				if c.typ.JSONL() {
					p.total, p.lostRecords, p.lostBytes = total, mc.lost, mc.lostB
				} else {
					// The damaged document does not parse: it holds no record to lose.
					p.lostBytes = max(size-mc.prefix.N, 0)
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
func jsonRecords(f *fsio.FirstNonWS) int {
	if f.Found && f.C == '{' {
		return 1
	}
	return 0
}

// plans asks the rule's strategies for a repair, from the bytes read or, for a big file, from
// the file itself.
func (e *Engine) plans(rule *policy.Rule, in *inspection) ([]*plan, error) {
	if in.big {
		return e.makeBigPlans(rule, in)
	}
	return makePlans(rule, in), nil
}
