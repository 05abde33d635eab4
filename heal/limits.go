package heal

import (
	"fmt"

	"github.com/sessionmedic/sessionmedic/heal/format"
)

// Large append-only logs are validated streaming, so that memory stays bounded whatever the
// file's size: only a block and the line it cuts are held (see format.StreamBuf). Every
// damaged file is planned from the file, at any size (bigplan.go). A file that cannot be
// judged streaming (a number or literal over format.MaxLine) is judged on its bytes held
// whole up to planLimit, and its damage reported, never repaired, above it.
const (
	streamThreshold = 32 << 20
	// holdLimit: a log judged record by record over this size is judged streaming (a block
	// at a time, never held), healthy or not. A first scan of thousands of transcripts
	// otherwise holds each one whole, in buffers up to 32 MiB that a one-shot command's
	// memory limit makes the collector hand back between files.
	holdLimit = format.StreamBuf
	planLimit = 256 << 20
	streamBuf = format.StreamBuf
)

// tooLargeToPlan is why a file over planLimit that cannot be judged streaming (a number or
// literal over format.MaxLine) is not repaired: its damage is reported (a smaller one is
// judged on its bytes held whole, and planned from the file as every damaged file is).
func tooLargeToPlan(size int64) string {
	return fmt.Sprintf("%d bytes that cannot be read streaming (%s): damage reported, not repaired", size, whyNotStreamed)
}
