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

// idKeyFields is what idKey reads of a record (format.RecordKeyFielder).
var idKeyFields = &jsonv.Fields{Members: map[string]*jsonv.Fields{"id": nil, "type": nil}}

func (copilotLog) RecordKeyFields() *jsonv.Fields         { return idKeyFields }
func (openclawTranscript) RecordKeyFields() *jsonv.Fields { return idKeyFields }
func (ovMessages) RecordKeyFields() *jsonv.Fields         { return idKeyFields }
func (piLog) RecordKeyFields() *jsonv.Fields              { return idKeyFields }

// nanobotKeyFields: nanobot's RecordKey reads _type alone.
var nanobotKeyFields = &jsonv.Fields{Members: map[string]*jsonv.Fields{"_type": nil}}

func (nanobot) RecordKeyFields() *jsonv.Fields { return nanobotKeyFields }
