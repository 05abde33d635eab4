package apps

import (
	"context"
	"encoding/base64"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
	"github.com/sessionmedic/sessionmedic/heal/lock"
	"github.com/sessionmedic/sessionmedic/policy"
)

// nanobot (nanobot.md): one JSONL file per session, a metadata record first, rewritten
// whole; from era D on, a namespace directory (32 hex digits) holds the sessions and the
// flock .session-files.lock that guards them.

var nanobotNamespaceRe = regexp.MustCompile(`^[0-9a-f]{32}$`)

func addNanobot(r *format.Registry) {
	r.Add("nanobot", func(string) format.Profile { return nanobot{} }, nanobot{})
	r.AddLock(string(policy.LockNanobot), lockNanobot)
}

type nanobot struct{ format.Log }

func (nanobot) Name() string           { return "nanobot" }
func (nanobot) Dialect() jsonv.Dialect { return jsonv.Dialect{NonFinite: true} }
func (nanobot) EmptyIsDamage() bool    { return true }
func (nanobot) CheckLines(f format.File, lines []format.Line) format.Verdict {
	return checkNanobot(f, lines)
}

// RecordKey: the file holds one metadata record.
func (nanobot) RecordKey(rec *jsonv.Value) string {
	if strOf(rec.Get("_type")) == "metadata" {
		return "\x00metadata"
	}
	return ""
}

// lockNanobot takes the namespace's .session-files.lock; eras A–C have no lock.
func lockNanobot(ctx context.Context, path string, _ format.Profile, lp format.LockParams) (format.Lock, error) {
	dir := filepath.Dir(path)
	if !nanobotNamespaceRe.MatchString(filepath.Base(dir)) {
		// Through a symlinked rule root the namespace has the name the link points to.
		dir = fsio.Resolved(dir)
	}
	if !nanobotNamespaceRe.MatchString(filepath.Base(dir)) {
		return format.Unlocked{}, nil
	}
	return lock.Flock(ctx, filepath.Join(dir, ".session-files.lock"), true, lockOptions(lp))
}

// TempLockTarget: nanobot's lock guards a whole directory; a temp file is cleaned up under the
// lock of its directory's sessions.
func (nanobot) TempLockTarget(temp string, _ []byte) string {
	return filepath.Join(filepath.Dir(temp), "session")
}

// checkNanobot: nanobot.md "What valid means" 3–7.
func checkNanobot(f format.File, lines []format.Line) format.Verdict {
	v := format.OK()
	var first *format.Line
	messages, providers := 0, 0
	for i := range lines {
		l := &lines[i]
		if l.Blank {
			continue
		}
		if first == nil {
			first = l
			continue
		}
		if t := l.Val.Get("_type"); isStr(t) {
			switch t.Str {
			case "provider_state":
				providers++
				if providers > 1 {
					return format.Damage(format.KindSchema, int64(l.Start), "line %d: a second provider_state record", i+1)
				}
				continue
			case "metadata":
				return format.Damage(format.KindSchema, int64(l.Start), "line %d: a metadata record after line 1", i+1)
			}
		}
		if !isStr(l.Val.Get("role")) {
			return format.Damage(format.KindSchema, int64(l.Start), "line %d: message has no string role", i+1)
		}
		messages++
	}
	if first == nil {
		return format.Damage(format.KindEmpty, 0, "no records")
	}
	m := first.Val
	if t := m.Get("_type"); !isStr(t) || t.Str != "metadata" {
		return format.Damage(format.KindSchema, int64(first.Start), "line 1 is not the metadata record")
	}
	key := m.Get("key")
	if !isStr(key) {
		return format.Damage(format.KindSchema, int64(first.Start), "metadata has no string key")
	}
	for _, k := range []string{"created_at", "updated_at"} {
		if !isStr(m.Get(k)) {
			return format.Damage(format.KindSchema, int64(first.Start), "metadata has no string %s", k)
		}
	}
	if !isObj(m.Get("metadata")) {
		return format.Damage(format.KindSchema, int64(first.Start), "metadata.metadata is not an object")
	}
	lc := m.Get("last_consolidated")
	if lc == nil || lc.Type != jsonv.Number || !lc.IsInt {
		return format.Damage(format.KindSchema, int64(first.Start), "metadata has no integer last_consolidated")
	}
	if lc.Int < 0 || lc.Int > int64(messages) {
		v.Warnings = append(v.Warnings, "last_consolidated out of range (nanobot resets it)")
	}
	stem := strings.TrimSuffix(filepath.Base(f.Path), ".jsonl")
	if stem != base64.RawURLEncoding.EncodeToString([]byte(key.Str)) && stem != nanobotLossyName(key.Str) {
		v.Warnings = append(v.Warnings, "metadata key does not match the file name")
	}
	return v
}

func nanobotLossyName(key string) string {
	s := strings.ReplaceAll(key, ":", "_")
	for _, ch := range []string{"<", ">", ":", "\"", "/", "\\", "|", "?", "*"} {
		s = strings.ReplaceAll(s, ch, "_")
	}
	return strings.TrimSpace(s)
}
