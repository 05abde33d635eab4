package apps

import (
	"bytes"
	"io"
	"slices"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// FinishSalvage: a resume begins with a metadata record and a $set.messages checkpoint that
// holds only the session context, then writes the whole history as a second checkpoint. When
// that one was torn (a power cut during the resume), the salvage ends on the context-only
// checkpoint: the loader finds no resumable message and the start-up sweep deletes the
// session. The checkpoints without a resumable message after the last resumable point are
// dropped when the history before them is resumable, as it was before that resume.
//
// A record the split recovered from a glued line (one the loader skipped whole) that answers
// a tool call no kept record makes is dropped too: its call was in the torn stub, and a
// result without its call is a request the model's API rejects, where the app alone, which
// skipped both, resumed (case gemini-465 of the campaign).
//
// It is [geminiLog.FinishSplice] of the bytes held.
func (p geminiLog) FinishSalvage(path string, damaged, data []byte) []byte {
	sp, err := p.FinishSplice(path, bytes.NewReader(damaged), int64(len(damaged)), bytes.NewReader(data), int64(len(data)))
	if err != nil || sp == nil {
		return data
	}
	out, err := sp.Bytes(bytes.NewReader(data))
	if err != nil {
		return data
	}
	return out
}

// FinishSplice is FinishSalvage read streaming: the lines it drops of salvaged, said as a
// splice of salvaged (nil: none dropped). It reads the salvage line by line, one line's tree
// held at a time; what it remembers is a 64-bit hash of each tool call's id, and the place,
// line hash and results' ids of each record holding a tool result, and the places of the
// lines it drops. The salvage is read once (and the damaged file, where an answer's call is
// missing), then again for each replay a drop needs: without the orphan answers, and from
// its end for the checkpoints, then without them.
//
// A salvage that is the damaged file's first lines (a torn last line cut) recovered no record
// from a glued line, and drops none: it is finished as it is unless a context-only checkpoint
// is pending at its end, which its last records, read from the end, tell (geminiPendingBack).
func (p geminiLog) FinishSplice(path string, damaged io.ReaderAt, dsize int64, salvaged io.ReaderAt, ssize int64) (*format.Splice, error) {
	if format.LinesPrefix(salvaged, damaged, ssize) {
		if pending, err := geminiPendingBack(salvaged, ssize); err != nil || !pending {
			return nil, err
		}
	}
	fr, err := geminiFinishRead(damaged, dsize, salvaged, ssize)
	if err != nil || !fr.checkpoint && len(fr.drop) == 0 {
		return nil, err // finished as it is
	}
	drop := fr.drop
	// With no line dropped, the replay is the one the reading made: resumable unless a
	// checkpoint may be dropped.
	ok := !fr.checkpoint
	if len(drop) > 0 {
		if ok, err = geminiReplayAt(salvaged, ssize, drop); err != nil {
			return nil, err
		}
	}
	if !ok {
		more, err := geminiTrailingCheckpoints(salvaged, ssize, drop)
		if err != nil {
			return nil, err
		}
		if len(more) > 0 {
			all := make(map[int64]int64, len(drop)+len(more))
			for _, d := range []map[int64]int64{drop, more} {
				for s, n := range d {
					all[s] = n
				}
			}
			if ok, err = geminiReplayAt(salvaged, ssize, all); err != nil {
				return nil, err
			}
			if ok {
				drop = all
			}
		}
	}
	if len(drop) == 0 {
		return nil, nil
	}
	starts := make([]int64, 0, len(drop))
	for s := range drop {
		starts = append(starts, s)
	}
	slices.Sort(starts)
	sp := &format.Splice{}
	at := int64(0)
	for _, s := range starts {
		sp.AddRange(at, s-at)
		at = s + drop[s]
	}
	sp.AddRange(at, ssize-at)
	return sp, nil
}

// geminiReplayAt: the replay of the records of salvaged but the lines skip holds (by start),
// the first of them the metadata record, holds a resumable message. A record is built as
// geminiFinish builds it: in an arena, to the members the replay reads, unless it may hold
// tool ids.
func geminiReplayAt(salvaged io.ReaderAt, ssize int64, skip map[int64]int64) (bool, error) {
	var r geminiReplay
	var arena jsonv.Arena
	var keys []int32
	first := true
	err := format.EachLineLong(geminiLog{}, salvaged, ssize, func(start, _ int64, line []byte, _, _ bool) error {
		if _, ok := skip[start]; ok || !format.ValidRecordKeys(geminiLog{}, line, &keys) {
			return nil // dropped, blank or no record
		}
		if first {
			first = false // the metadata record
			return nil
		}
		r.apply(geminiRecord(&arena, bytes.TrimRight(line, "\r"), keys))
		return nil
	})
	return r.resumable(), err
}

// geminiTrailingCheckpoints: the checkpoints without a resumable message after the last
// resumable point of salvaged but the lines skip holds, read from its end; its first line
// (the first skip does not hold) is never one.
func geminiTrailingCheckpoints(salvaged io.ReaderAt, ssize int64, skip map[int64]int64) (map[int64]int64, error) {
	first := int64(0)
	for n, ok := skip[first]; ok; n, ok = skip[first] {
		first += n
	}
	drop := map[int64]int64{}
	err := format.SplitBackLong(geminiLog{}, salvaged, ssize, nil, func(l format.Line) error {
		start := int64(l.Start)
		if _, ok := skip[start]; ok {
			return nil
		}
		if start == first {
			return format.Stop
		}
		v := l.Val
		if v == nil {
			return nil
		}
		if checkpoint, resumable := geminiCheckpoint(v, nil); checkpoint {
			if resumable {
				return format.Stop
			}
			drop[start] = int64(l.End - l.Start)
			return nil
		}
		if isStr(v.Get("id")) && geminiResumable(v, nil) {
			return format.Stop
		}
		return nil
	})
	if err == format.Stop {
		err = nil
	}
	return drop, err
}

// geminiPendingBack is whether a context-only checkpoint is pending at the end of salvaged
// (geminiFinish.read's pending once it has read every record), read from its end: the last
// record that sets it — a checkpoint, pending when it holds no resumable message, or a
// resumable message, not pending — settles it, and no record before it is read. The first
// record (the metadata record, which sets nothing) is found from the start.
func geminiPendingBack(salvaged io.ReaderAt, ssize int64) (bool, error) {
	var keys []int32
	first := int64(-1)
	err := format.EachLineLong(geminiLog{}, salvaged, ssize, func(start, _ int64, line []byte, _, _ bool) error {
		if format.ValidRecordKeys(geminiLog{}, line, &keys) {
			first = start
			return format.Stop
		}
		return nil
	})
	if err != nil || first < 0 {
		return false, err
	}
	var arena jsonv.Arena
	pending := false
	err = format.EachLineBackLong(geminiLog{}, salvaged, ssize, func(start, _ int64, line []byte, _, _ bool) error {
		if start <= first {
			return format.Stop
		}
		if !format.ValidRecordKeys(geminiLog{}, line, &keys) {
			return nil // blank or no record
		}
		v, src := geminiRecord(&arena, bytes.TrimRight(line, "\r"), keys)
		if checkpoint, resumable := geminiCheckpoint(v, src); checkpoint {
			pending = !resumable
			return format.Stop
		}
		if isStr(v.Get("id")) && geminiResumable(v, src) {
			return format.Stop
		}
		return nil
	})
	return pending, err
}

// geminiRecord is the record body (a valid one, keys the offsets of its members) as a replay
// builds it: in arena, to the members the replay reads (src, its bytes, then read with it),
// unless it may hold tool ids (the whole tree; src nil).
func geminiRecord(arena *jsonv.Arena, body []byte, keys []int32) (v *jsonv.Value, src []byte) {
	if geminiNoToolIDs(body) {
		return arena.ParseFieldsKeys(body, nodeDialect, geminiFields, keys), body
	}
	return jsonv.ParseDepthValid(body, nodeDialect, 0), nil
}

// geminiCheckpoint: the record v (built from src, as geminiRecord builds it) holds a
// $set.messages checkpoint, and one of its messages is resumable.
func geminiCheckpoint(v *jsonv.Value, src []byte) (checkpoint, resumable bool) {
	msgs := v.Get("$set").Get("messages")
	for _, m := range arrOf(msgs) {
		resumable = resumable || geminiResumable(m, src)
	}
	return isArr(msgs), resumable
}
