package format

import "github.com/sessionmedic/sessionmedic/heal/jsonv"

// The checks of a document, for the tests of package format_test (which import the apps'
// profiles): held whole and streamed from a reader, each element built in an arena.
var (
	CheckDocHeld     = checkDocValid
	CheckDocStreamed = checkDoc
)

// CheckDocFresh is CheckDocHeld with each element built in nodes of its own (jsonv.WalkValid),
// the arena left unused: what the pass in an arena must agree with.
func CheckDocFresh(p Profile, f File, data []byte) (Verdict, int, error) {
	v, n, _, err := checkDocWith(p, f, func(_ *jsonv.Arena, s jsonv.Shape, elem func(jsonv.Elem)) (*jsonv.Value, jsonv.WalkInfo, error) {
		return jsonv.WalkValid(data, p.Dialect(), s, elem)
	})
	return v, n, err
}
