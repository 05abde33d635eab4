package format

import (
	"io"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
)

// LargeVerdict judges a file too large to read whole (over limit) that cannot be streamed
// record by record: all NUL bytes is damage (reported, not repaired); anything else is
// skipped with the reason. Memory stays bounded either way.
func LargeVerdict(path string, limit int64) (Verdict, fsio.Identity, error) {
	f, id, err := fsio.OpenRegular(path)
	if err != nil {
		return Verdict{}, fsio.Identity{}, err
	}
	defer f.Close()
	buf := make([]byte, StreamBuf)
	for {
		n, err := f.Read(buf)
		if !AllNUL(buf[:n]) && n > 0 {
			return Unjudged("%d bytes: a whole JSON document over %d bytes is not validated in memory", id.Size, limit), id, nil
		}
		if err == io.EOF || n == 0 {
			break
		}
		if err != nil {
			return Verdict{}, id, err
		}
	}
	return Damage(KindNULFilled, 0, "file is %d NUL bytes", id.Size), id, nil
}
