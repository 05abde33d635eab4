package heal

import (
	"bytes"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/fsio"
)

// The edit of a big file: what its temp file receives is an fsio.Content (bytes of the
// original, its valid lines streamed by format.ValidLines, or bytes in memory).

// bigEdit is the part of an edit of a big file that stands for its bytes.
type bigEdit struct {
	src    fsio.Content // the new bytes; data is nil unless src is fsio.Bytes
	oldSHA string       // "" until oldSum is done, when it is set
	// oldSum, when set, is the original's sum being taken beside the plan that made the
	// edit: waited for once the new file is written (a replace), or before the quarantine.
	oldSum  *format.AsideHash
	newSHA  string // "" until the new file is written when sumLater
	newSize int64
	// sumLater: newSHA is taken while the new file is written (a replace of a big file, whose
	// result the plan judged without hashing it), and the journal told it before the rename.
	sumLater bool
	prefix   bool // the new bytes are a prefix of the old: a tail cut
	small    bool // an app log up to appBigFile, another file up to bigFile: a tail cut replaces it whole
}

// waitOld waits for the original's sum when it is being taken (bigEdit.oldSum), and keeps
// it (oldSHA).
func (b *bigEdit) waitOld() error {
	if b.oldSum == nil {
		return nil
	}
	sum, err := b.oldSum.Wait()
	if err != nil {
		return err
	}
	b.oldSHA, b.oldSum = sum, nil
	return nil
}

// resumeSum: a result whose sum is taken as it is written, and that starts with bytes of the
// original, has that sum go on from the original's, as far as its hash has gone.
func (b *bigEdit) resumeSum() {
	if sp, ok := b.src.(*format.Splice); ok && b.sumLater && b.oldSum != nil {
		sp.ResumeSum(b.oldSum.StateBefore(sp.FirstKept()))
	}
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

// quarantined is what a heal of ed puts into quarantine: the whole original, or, of a big
// file's tail cut, the bytes it removes (see Engine.quarantineFile).
func (ed *edit) quarantined() int64 {
	if ed.cutsInPlace() {
		return ed.oldID.Size - ed.big.newSize
	}
	return ed.oldSize()
}

// cutsInPlace: a big file's tail cut, whose removed bytes alone are quarantined, and which is
// made in place where a write lease proves no one else has the file open (see
// Engine.truncateLeased).
func (ed *edit) cutsInPlace() bool {
	return !ed.missing && ed.big != nil && ed.big.prefix && !ed.big.small && ed.big.newSize > 0 && ed.big.newSize < ed.oldID.Size
}

// lateQuarantine: ed replaces the file (never cuts it) and the original's sum is still being
// taken: its quarantine is made once the new file is written, before the rename (see
// Engine.apply), when the sum is known.
func (ed *edit) lateQuarantine() bool {
	return ed.big != nil && ed.big.oldSum != nil && !ed.missing && !ed.big.prefix
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
	return fsio.Bytes(ed.data)
}
