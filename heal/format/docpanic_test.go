package format_test

import (
	"bytes"
	"math/rand"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/apps"
	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
	"github.com/sessionmedic/sessionmedic/internal/panics"
)

// boomProfile is an app's document profile whose checklist panics at its first element.
type boomProfile struct{ format.Profile }

func (b boomProfile) DocShape() jsonv.Shape { return b.Profile.(format.DocChecker).DocShape() }
func (b boomProfile) NewDocCheck(f format.File) format.DocCheck {
	return boomCheck{b.Profile.(format.DocChecker).NewDocCheck(f)}
}

type boomCheck struct{ format.DocCheck }

func (boomCheck) Elem(jsonv.Elem) { panic("boom") }

// A document's checklist walks beside its syntax pass on a goroutine of its own: its panic
// is raised again where the verdict is waited for. Where the syntax pass refuses the
// document, the walk is stopped at its next read, before or after its first element: a
// panic it met is raised all the same, and none is raised where it was stopped first —
// never one left on the walk's goroutine, nor a wait that hangs.
func TestAPanicOfADocumentsWalkIsRaisedOnTheCaller(t *testing.T) {
	prof := boomProfile{apps.Registry().Profile("copaw", "s.json")}
	doc := copawDoc(rand.New(rand.NewSource(5)), 200_000)
	for _, refused := range []bool{false, true} {
		data := doc
		if refused {
			data = append(bytes.Clone(doc), " x"...)
		}
		got := func() (p any) {
			defer func() { p = recover() }()
			format.JudgeDocAt(prof, "s.json", bytes.NewReader(data), int64(len(data)))
			return nil
		}()
		e, boom := got.(*panics.Error)
		boom = boom && e.Value == "boom"
		if !boom && (!refused || got != nil) {
			t.Errorf("%d bytes: %v", len(data), got)
		}
	}
}
