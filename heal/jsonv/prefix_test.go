package jsonv

import (
	"bytes"
	"testing"
)

// Wherever an object is cut, the members read are complete members of the whole object,
// byte for byte, top level or nested.
func TestPrefixMembersNeverTakeACutValue(t *testing.T) {
	line := []byte(`{"timestamp":"2026-11-22T21:46:17.468Z","ordinal":0,"type":"session_meta","payload":{"id":"01a2","n":12,"cwd":"/tmp/a\"b","nested":{"x":[1,2]},"ok":true}}`)
	root, err := Parse(line, Dialect{})
	if err != nil {
		t.Fatal(err)
	}
	if m := PrefixMembers(line, Dialect{}); len(m) != 4 || string(m["type"]) != `"session_meta"` {
		t.Fatalf("top level: %q", m)
	}
	if m := PrefixMembers(line, Dialect{}, "payload"); len(m) != 5 || string(m["cwd"]) != `"/tmp/a\"b"` {
		t.Fatalf("payload: %q", m)
	}
	for n := 0; n <= len(line); n++ {
		for _, path := range [][]string{nil, {"payload"}} {
			obj := root
			for _, p := range path {
				obj = obj.Get(p)
			}
			for k, raw := range PrefixMembers(line[:n], Dialect{}, path...) {
				v := obj.Get(k)
				if v == nil || !bytes.Equal(raw, v.Raw(line)) {
					t.Fatalf("cut at %d, path %v: member %s = %s is not the object's", n, path, k, raw)
				}
			}
		}
	}
	for _, bad := range []string{``, `[`, `{"a"`, `{"a":`, `{1:2}`, `{"a":1 "b":2}`} {
		if m := PrefixMembers([]byte(bad), Dialect{}); len(m) > 0 && bad != `{"a":1 "b":2}` {
			t.Errorf("%q: %q", bad, m)
		}
	}
}

// ParseDepth builds the levels asked for exactly as Parse does, and nothing below.
func TestParseDepth(t *testing.T) {
	b := []byte(`{"a":1,"o":{"x":[1,{"y":2}],"s":"t"},"l":[{"z":3}],"s":"\u00e9"}`)
	full, err := Parse(b, Dialect{})
	if err != nil {
		t.Fatal(err)
	}
	for depth, wantKeys := range map[int]int{1: 0, 2: 2} {
		v, err := ParseDepth(b, Dialect{}, depth)
		if err != nil {
			t.Fatal(err)
		}
		if len(v.Keys) != len(full.Keys) || v.Get("s").Str != "é" || v.Get("a").Int != 1 {
			t.Fatalf("depth %d: top level %+v", depth, v)
		}
		o := v.Get("o")
		if o.Type != Object || string(o.Raw(b)) != string(full.Get("o").Raw(b)) || len(o.Keys) != wantKeys {
			t.Errorf("depth %d: o = %s with %d keys", depth, o.Raw(b), len(o.Keys))
		}
		if l := v.Get("l"); l.Type != Array || string(l.Raw(b)) != `[{"z":3}]` {
			t.Errorf("depth %d: l = %s", depth, l.Raw(b))
		}
	}
	if _, err := ParseDepth([]byte(`{"a":`), Dialect{}, 1); err == nil {
		t.Error("an invalid document parsed")
	}
}
