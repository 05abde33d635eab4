package heal

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/fsio"
)

// Large append-only logs are validated streaming, so that memory stays bounded whatever the
// file's size: only one line is held at a time. A damaged one is read whole for planning
// only up to planLimit; beyond that the damage is reported and the heal refused.
const (
	streamThreshold = 32 << 20
	planLimit       = 256 << 20
	streamBuf       = format.StreamBuf
	maxLine         = format.MaxLine // a longer record is reported, not held
)

var errTooLargeToPlan = errors.New("too large to repair in memory")

func tooLargeToPlan(size int64) string {
	return fmt.Sprintf("%d bytes: damage in files over %d bytes is reported, not repaired in memory", size, planLimit)
}

// largeVerdict judges a file too large to read whole (over planLimit) that cannot be streamed
// record by record: all NUL bytes is damage (reported, not repaired); anything else is
// skipped with the reason. Memory stays bounded either way.
func largeVerdict(path string) (Verdict, Identity, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return Verdict{}, Identity{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return Verdict{}, Identity{}, fsio.ErrNotRegular
	}
	id := fsio.IdentityOf(fi)
	buf := make([]byte, streamBuf)
	for {
		n, err := f.Read(buf)
		if !format.AllNUL(buf[:n]) && n > 0 {
			return skipped("%d bytes: a whole JSON document over %d bytes is not validated in memory", id.Size, planLimit), id, nil
		}
		if err == io.EOF || n == 0 {
			break
		}
		if err != nil {
			return Verdict{}, id, err
		}
	}
	return damaged(KindNULFilled, 0, "file is %d NUL bytes", id.Size), id, nil
}
