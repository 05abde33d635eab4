package apps

import (
	"regexp"

	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// uuidRe is a UUID as the apps name their sessions with one: lowercase hex, 8-4-4-4-12.
var uuidRe = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func isStr(v *jsonv.Value) bool { return v != nil && v.Type == jsonv.String }
func isObj(v *jsonv.Value) bool { return v != nil && v.Type == jsonv.Object }
func isArr(v *jsonv.Value) bool { return v != nil && v.Type == jsonv.Array }

func strOf(v *jsonv.Value) string {
	if isStr(v) {
		return v.Str
	}
	return ""
}
