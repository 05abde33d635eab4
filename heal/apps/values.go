package apps

import "github.com/sessionmedic/sessionmedic/heal/jsonv"

func isStr(v *jsonv.Value) bool { return v != nil && v.Type == jsonv.String }
func isObj(v *jsonv.Value) bool { return v != nil && v.Type == jsonv.Object }
func isArr(v *jsonv.Value) bool { return v != nil && v.Type == jsonv.Array }

func strOf(v *jsonv.Value) string {
	if isStr(v) {
		return v.Str
	}
	return ""
}
