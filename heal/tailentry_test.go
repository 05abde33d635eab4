package heal

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/state"
)

// A big file's tail cut quarantines only the bytes it removes: the entry says from which
// offset, and the sum of what the cut left in the file. A restore puts the two back together
// while the file still starts with those bytes, whatever the app appended since, and refuses,
// writing nothing, once the file was rewritten or the entry's bytes do not make the original.
func TestTailCutQuarantinesWhatItRemoves(t *testing.T) {
	const healed = "{\"a\":1}\n{\"b\":2}\n"
	heal := func(t *testing.T) (*Engine, Target, *Manifest) {
		e, root := bigEngine(t, 1)
		tg := bigTarget(t, e, root, bigTorn)
		r := e.Heal(context.Background(), tg, false)
		if r.Action != ActionHealed || r.QuarantinedBytes != int64(len(bigTorn)-len(healed)) {
			t.Fatalf("%+v", r)
		}
		if b, _ := os.ReadFile(tg.Path); string(b) != healed {
			t.Fatalf("healed to %q", b)
		}
		m, err := e.Quarantine.Get(filepath.Base(r.Quarantine))
		if err != nil {
			t.Fatal(err)
		}
		tail, _ := os.ReadFile(filepath.Join(m.Dir, m.File))
		if m.Prefix != int64(len(healed)) || m.Size != int64(len(bigTorn)) || string(tail) != bigTorn[len(healed):] ||
			m.PrefixSHA256 != sha([]byte(healed)) || m.SHA256 != sha([]byte(bigTorn)) {
			t.Fatalf("entry %+v holds %q", m, tail)
		}
		if _, err := m.Bytes(); !errors.Is(err, state.ErrTail) {
			t.Fatalf("Bytes of a tail entry: %v", err)
		}
		return e, tg, m
	}
	t.Run("restore after appends", func(t *testing.T) {
		e, tg, m := heal(t)
		appendTo(t, tg.Path, []byte("{\"d\":4}\n"))
		rs, err := e.Restore(context.Background(), m, tg)
		if err != nil || rs.Quarantine == "" {
			t.Fatalf("restore: %+v %v", rs, err)
		}
		if b, _ := os.ReadFile(tg.Path); string(b) != bigTorn {
			t.Fatalf("restored %q", b)
		}
		// What the restore replaced (the healed file and the append) is kept, whole.
		q, err := e.Quarantine.Get(filepath.Base(rs.Quarantine))
		if err != nil {
			t.Fatal(err)
		}
		if b, err := original(t, q); err != nil || string(b) != healed+"{\"d\":4}\n" {
			t.Fatalf("the restore's own entry holds %q (%v)", b, err)
		}
	})
	t.Run("refused once rewritten", func(t *testing.T) {
		e, tg, m := heal(t)
		rewritten := "{\"a\":9}\n{\"b\":2}\n"
		os.WriteFile(tg.Path, []byte(rewritten), 0o600)
		if _, err := e.Restore(context.Background(), m, tg); err == nil || !strings.Contains(err.Error(), "no longer starts with") {
			t.Fatalf("restore over a rewritten file: %v", err)
		}
		if b, _ := os.ReadFile(tg.Path); string(b) != rewritten {
			t.Fatalf("the refused restore wrote %q", b)
		}
	})
	t.Run("refused when the tail is not the original's", func(t *testing.T) {
		e, tg, m := heal(t)
		os.WriteFile(filepath.Join(m.Dir, m.File), []byte("{\"c\":3}"), 0o600)
		if _, err := e.Restore(context.Background(), m, tg); err == nil || !strings.Contains(err.Error(), "sha256") {
			t.Fatalf("restore of a changed tail: %v", err)
		}
		if b, _ := os.ReadFile(tg.Path); string(b) != healed {
			t.Fatalf("the refused restore wrote %q", b)
		}
	})
}

// A big app log torn at its end, whose last-good copy the salvage keeps whole (an older
// prefix of the file, as an append-only log's copy is): the copy can keep no record more
// than the salvage, and is neither judged nor united with it. A refusal says so, where it
// would otherwise list the copy's and the union's losses.
func TestLastGoodTheSalvageKeepsWholeIsNotPlanned(t *testing.T) {
	healthy := jsonlSamples(t, "openclaw", "healthy")
	var orig []byte
	for _, h := range healthy {
		if bytes.Count(h, []byte("\n")) > bytes.Count(orig, []byte("\n")) {
			orig = h
		}
	}
	lines := bytes.SplitAfter(orig, []byte("\n"))
	if len(lines) < 4 {
		t.Fatal("no OpenClaw sample of 4 lines")
	}
	lg := bytes.Join(lines[:len(lines)/2], nil)
	data := append(bytes.Clone(orig), `{"type":"message","id":"x`...)
	for _, maxLoss := range []float64{1, 0} {
		e, root := bigEngine(t, 1)
		rel := "state/agents/main/sessions/5dbda090-2ac0-44ad-b015-c3eca97cfdce.jsonl"
		p := filepath.Join(root, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, data, 0o600)
		if err := e.LastGood.Put(p, lg); err != nil {
			t.Fatal(err)
		}
		rule := appRule(t, "openclaw", root)
		rule.Limits.MaxLoss = maxLoss
		r := e.Heal(context.Background(), Target{Path: p, Rule: rule}, false)
		after, _ := os.ReadFile(p)
		if maxLoss == 1 {
			if r.Action != ActionHealed || r.Strategy != "salvage" || !bytes.Equal(after, orig) {
				t.Fatalf("%+v: %d bytes after", r, len(after))
			}
			continue
		}
		if r.Action != ActionRefused || !slices.Contains(r.Tried, "last-good: "+whyLastGoodKept) {
			t.Fatalf("refused with max_loss 0: %+v", r)
		}
		for _, tr := range r.Tried {
			if strings.HasPrefix(tr, "salvage+last-good") {
				t.Fatalf("a union was planned: %q", r.Tried)
			}
		}
	}
}
