package apps

import "github.com/sessionmedic/sessionmedic/heal/jsonv"

// idKey keys a record by its id, the session header apart ("" when it has no id).
func idKey(rec *jsonv.Value) string {
	if id := strOf(rec.Get("id")); id != "" {
		if strOf(rec.Get("type")) == "session" {
			return "\x00header"
		}
		return "id:" + id
	}
	return ""
}
