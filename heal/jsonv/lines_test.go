package jsonv

import (
	"fmt"
	"reflect"
	"testing"
)

func TestLines(t *testing.T) {
	collect := func(s string, stopAfter int) []string {
		var got []string
		Lines([]byte(s), func(start int, line []byte, terminated bool) bool {
			got = append(got, fmt.Sprintf("%d:%q:%v", start, line, terminated))
			return len(got) != stopAfter
		})
		return got
	}
	for _, c := range []struct {
		in   string
		stop int
		want []string
	}{
		{"", 0, nil},
		{"\n", 0, []string{`0:"":true`}},
		{"\n\n", 0, []string{`0:"":true`, `1:"":true`}},
		{"a", 0, []string{`0:"a":false`}},
		{"a\n", 0, []string{`0:"a":true`}},
		{"a\nbc\n", 0, []string{`0:"a":true`, `2:"bc":true`}},
		{"a\nbc", 0, []string{`0:"a":true`, `2:"bc":false`}},
		{"{}\r\n[1]\r\n", 0, []string{`0:"{}\r":true`, `4:"[1]\r":true`}},
		{"a\n\nb\n", 0, []string{`0:"a":true`, `2:"":true`, `3:"b":true`}},
		{"a\nb\nc\n", 2, []string{`0:"a":true`, `2:"b":true`}},
		{"a\nb\nc", 1, []string{`0:"a":true`}},
	} {
		if got := collect(c.in, c.stop); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Lines(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestLinesCannotOverwrite(t *testing.T) {
	b := []byte("[1]\n[2]\n")
	Lines(b, func(_ int, line []byte, _ bool) bool {
		_ = append(line, 'x') // capacity is clipped, so this must not touch b
		return true
	})
	if string(b) != "[1]\n[2]\n" {
		t.Errorf("input modified: %q", b)
	}
}

// ExampleLines validates a JSONL file line by line, as the JSONL checklists do.
func ExampleLines() {
	jsonl := []byte("{\"role\":\"user\"}\n{\"role\":\n{\"role\":\"assistant\"}\n{\"role\":\"to")
	Lines(jsonl, func(start int, line []byte, terminated bool) bool {
		if err := Valid(line, Dialect{}); err != nil {
			fmt.Printf("line at %d (terminated=%v): %v\n", start, terminated, err)
		}
		return true
	})
	// Output:
	// line at 16 (terminated=true): truncated at offset 8: unexpected end of json input
	// line at 46 (terminated=false): truncated at offset 11: unexpected end of json input
}
