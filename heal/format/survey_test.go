package format

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
)

// Survey measures a JSONL with a torn tail and a candidate holding its first records.
func TestSurveyTornTail(t *testing.T) {
	orig := "{\"a\":1}\n{\"b\":2}\n{\"c\":"
	cand := &SurveyCand{Data: []byte("{\"a\":1}\n{\"x\":9}\n")}
	res, err := Survey(strings.NewReader(orig), int64(len(orig)), plain{true}, SurveyOptions{}, []*SurveyCand{cand})
	if err != nil {
		t.Fatal(err)
	}
	hex256 := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	if res.OldSHA != hex256(orig) {
		t.Errorf("OldSHA = %s", res.OldSHA)
	}
	salv := "{\"a\":1}\n{\"b\":2}\n"
	if res.Total != 3 || res.SalvKeep != 2 || res.SalvLost != 1 || res.SalvLostBytes != 5 ||
		res.SalvSize != int64(len(salv)) || !res.SalvPrefix || res.SalvSHA != hex256(salv) || res.Line1Blank {
		t.Errorf("salvage figures = %+v", res)
	}
	if cand.PrefixN != 10 || cand.Lost != 2 || cand.LostBytes != 8+5 {
		t.Errorf("candidate = prefix %d, lost %d (%d bytes)", cand.PrefixN, cand.Lost, cand.LostBytes)
	}
	if res.NormSHA != "" || res.ValueSHA != "" {
		t.Errorf("unasked hashes: %q %q", res.NormSHA, res.ValueSHA)
	}
	// The torn record's whole version, earlier in the file, is not lost; a changed file is
	// ErrChanged.
	orig = "{\"c\":3}\n{\"c\":"
	res, err = Survey(strings.NewReader(orig), int64(len(orig)), plain{true}, SurveyOptions{}, nil)
	if err != nil || res.Total != 2 || res.SalvLost != 0 || res.SalvLostBytes != 0 {
		t.Errorf("whole version held: %+v, %v", res, err)
	}
	if _, err := Survey(strings.NewReader(orig), int64(len(orig)), plain{true},
		SurveyOptions{Unchanged: func() bool { return false }}, nil); err != fsio.ErrChanged {
		t.Errorf("changed: err = %v", err)
	}
}
