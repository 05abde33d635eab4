package heal

import (
	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/internal/panics"
)

// finishRun is an app's finish (format.StreamFinisher) of a salvage, replayed on its own
// goroutine: done is closed once sp (the lines the finish drops, a splice of the salvage;
// nil: none) and err are set.
type finishRun struct {
	sp     *format.Splice
	err    error
	done   chan struct{}
	caught panics.Slot // the replay's panic, raised again where it is waited for
}

// earlyFinish is the finish of a big app log's bytes before its torn last line, started as
// its heal's inspection begins, beside the judge of the cut (inspectTorn), which it would
// otherwise follow: the version id of the file, cut at x. It reads the file through its own
// descriptor, which it closes when done; a finish no plan adopts ends on its own.
type earlyFinish struct {
	finishRun
	id Identity
	x  int64
}

// startEarlyFinish starts the finish of the bytes before the torn last line of the version
// id of the big app log at path, when typ's app finishes a salvage and the file ends with
// such a line; nil otherwise.
func startEarlyFinish(path string, typ format.Profile, id Identity) *earlyFinish {
	fin, ok := typ.(format.StreamFinisher)
	if !ok {
		return nil
	}
	f, err := fsio.OpenStable(path, id)
	if err != nil {
		return nil
	}
	x, ok := format.TornStart(f, id.Size)
	if !ok {
		f.Close()
		return nil
	}
	ef := &earlyFinish{finishRun: finishRun{done: make(chan struct{})}, id: id, x: x}
	go func() {
		defer close(ef.done)
		defer f.Close()
		defer ef.caught.Capture()
		pre := &format.Splice{}
		pre.AddRange(0, x)
		ef.sp, ef.err = fin.FinishSplice(path, f, id.Size, pre.At(f), x)
	}()
	return ef
}

// adopt is ef, for the plan of the version id of the file cut at x, or nil when it is the
// finish of another version or cut.
func (ef *earlyFinish) adopt(id Identity, x int64) *finishRun {
	if ef == nil || !ef.id.Same(id) || ef.x != x {
		return nil
	}
	return &ef.finishRun
}
