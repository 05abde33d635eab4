package heal

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gofrs/flock"
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

// A dry run takes the heal's liveness decision, writing nothing: where the heal says busy
// (a live process of another pid namespace names the session; the app holds its flock; a
// writer holds the file open for more than a tail cut), so does the dry run, with the same
// reason, and the app's lock file is not created where it is missing.
func TestDryRunTakesTheHealsLivenessDecision(t *testing.T) {
	ctx := context.Background()
	root, transcript, e := claudeForeignCase(t)
	tg := Target{Path: transcript, Rule: &e.Policy.Rules[0]}
	before := snapshot(t, root)
	dry, real := e.Heal(ctx, tg, true), e.Heal(ctx, tg, false)
	if dry.Verdict != Busy || dry.Action != ActionNone || dry.Reason != real.Reason || dry.Kind != real.Kind {
		t.Errorf("claude-code, a foreign registry entry: dry run %s %s %q (%s), heal %s %s %q (%s)",
			dry.Verdict, dry.Action, dry.Reason, dry.Kind, real.Verdict, real.Action, real.Reason, real.Kind)
	}
	assertSame(t, before, snapshot(t, root), nil)

	// PraisonAI's flock, held: busy; let go: would-heal, and no lock file made by the dry run.
	e, p := praisonEngine(t)
	e.Policy.Rules[0].Lock.Wait = 10 * time.Millisecond
	tg = Target{Path: p, Rule: &e.Policy.Rules[0]}
	os.WriteFile(p, []byte(garbage), 0o600)
	r := e.Heal(ctx, tg, true)
	if r.Verdict != Damaged || r.Action != ActionWouldHeal {
		t.Fatalf("praisonai, no lock: dry run %s %s (%s)", r.Verdict, r.Action, r.Reason)
	}
	if _, err := os.Lstat(p + ".lock"); err == nil {
		t.Error("the dry run created the app's lock file")
	}
	fl := flock.New(p + ".lock")
	if ok, err := fl.TryLock(); !ok || err != nil {
		t.Fatal(ok, err)
	}
	dry, real = e.Heal(ctx, tg, true), e.Heal(ctx, tg, false)
	fl.Unlock()
	if dry.Verdict != Busy || dry.Reason != real.Reason || !strings.Contains(dry.Reason, p+".lock: flock held") {
		t.Errorf("praisonai, flock held: dry run %s %q, heal %s %q", dry.Verdict, dry.Reason, real.Verdict, real.Reason)
	}

	// A writer holds the file open: a plan that is more than a tail cut (a middle line
	// dropped) is deferred.
	_, p, e = claudeCase(t, "bad_middle_line")
	e.findWriters = func(dev, ino uint64) []int { return []int{4242} }
	tg = Target{Path: p, Rule: &e.Policy.Rules[0]}
	dry, real = e.Heal(ctx, tg, true), e.Heal(ctx, tg, false)
	if dry.Verdict != Busy || dry.Reason != real.Reason || !strings.Contains(dry.Reason, "held open for writing by pid [4242]") {
		t.Errorf("claude-code, an open writer: dry run %s %q, heal %s %q", dry.Verdict, dry.Reason, real.Verdict, real.Reason)
	}
}
