package main

import (
	"go/format"
	"testing"
)

// The peer program's source is gofmt-clean Go (it is built in the temp dir at run time).
func TestJSONTextPeerSource(t *testing.T) {
	out, err := format.Source([]byte(jsontextPeer))
	if err != nil {
		t.Fatalf("jsontextPeer does not parse: %v", err)
	}
	if string(out) != jsontextPeer {
		t.Errorf("jsontextPeer is not gofmt-clean:\n%s", out)
	}
}
