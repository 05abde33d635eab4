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
// is raised again where the verdict is waited for, whether the syntax pass accepts the
// document or refuses it.
func TestAPanicOfADocumentsWalkIsRaisedOnTheCaller(t *testing.T) {
	prof := boomProfile{apps.Registry().Profile("copaw", "s.json")}
	doc := copawDoc(rand.New(rand.NewSource(5)), 200_000)
	for _, data := range [][]byte{doc, append(bytes.Clone(doc), " x"...)} {
		got := func() (p any) {
			defer func() { p = recover() }()
			format.JudgeDocAt(prof, "s.json", bytes.NewReader(data), int64(len(data)))
			return nil
		}()
		if e, ok := got.(*panics.Error); !ok || e.Value != "boom" {
			t.Errorf("%d bytes: %v", len(data), got)
		}
	}
}
