package heal

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sessionmedic/sessionmedic/heal/format"
)

// claudeForeignEntry is the registry entry of samples/claude-code/live_pid_file, and
// claudeForeignDomain a pid namespace that is no one's here: an entry naming it is the
// entry of a process of another host or container sharing the home, never judged stale.
const (
	claudeForeignEntry  = "home/.claude/sessions/19481.json"
	claudeForeignDomain = "linux:00000000000000000000000000000000:pid:[1]"
)

// claudeForeignCase is live_pid_file with its entry in claudeForeignDomain.
func claudeForeignCase(t *testing.T) (root, transcript string, e *Engine) {
	t.Helper()
	root, transcript, e = claudeCase(t, "live_pid_file")
	p := filepath.Join(root, claudeForeignEntry)
	b := claudeDomainRe.ReplaceAll(read(t, p), []byte(`"pidDomain":`+strconv.Quote(claudeForeignDomain)))
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	e.Policy.Rules[0].Lock.Wait = 10 * time.Millisecond
	return root, transcript, e
}

// A busy report says who keeps the file busy: the protocol, the registry entry and why its
// process counts as running (here, a pid namespace that is not ours), never only "busy".
func TestBusyReportNamesProtocolAndHolder(t *testing.T) {
	root, transcript, e := claudeForeignCase(t)
	tg := Target{Path: transcript, Rule: &e.Policy.Rules[0]}
	before := snapshot(t, root)
	r := e.Heal(context.Background(), tg, false)
	if r.Verdict != Busy || r.Action != ActionNone {
		t.Fatalf("heal: %s %s (%s), want busy", r.Verdict, r.Action, r.Reason)
	}
	for _, want := range []string{
		"lock protocol claude-code",
		filepath.Join(root, claudeForeignEntry),
		"names session " + claudeSID,
		"pidDomain " + claudeForeignDomain + " is not ours",
	} {
		if !strings.Contains(r.Reason, want) {
			t.Errorf("reason %q does not say %q", r.Reason, want)
		}
	}
	// The damage found is still said: a busy file kept from its heal is a damaged one.
	if r.Kind != format.KindTruncated {
		t.Errorf("kind %q, want %q (the damage the heal was kept from)", r.Kind, format.KindTruncated)
	}
	assertSame(t, before, snapshot(t, root), nil)
}
