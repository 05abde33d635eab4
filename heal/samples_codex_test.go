package heal

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
	"golang.org/x/sys/unix"
)

const (
	codexThread  = "01a20539-677f-7710-87e4-54a740761238"
	codexRollout = "home/.codex/sessions/2026/11/22/rollout-2026-11-22T21-46-17-" + codexThread + ".jsonl"
	codexHealthy = "codex/healthy/" + codexRollout
	codexLocks   = "home/.codex/thread-writer-locks"
)

// codexSampleCases are the sample cases of samples/codex*/ (see its README).
func codexSampleCases() []sampleCase {
	withLG := func(f fileExp, strategy string) fileExp {
		f.lgFrom, f.lgStrategy, f.lgWant = codexHealthy, strategy, codexHealthy
		return f
	}
	healed := func(src, kind, strategy string, check func(*testing.T, []byte, []byte)) sampleCase {
		return sampleCase{app: "codex", src: src, preset: "codex", setup: codexThreadLockFile,
			files: []fileExp{{file: codexRollout, kind: kind, strategy: strategy, check: check}}}
	}
	refused := func(src, kind string) sampleCase {
		return sampleCase{app: "codex", src: src, preset: "codex", files: []fileExp{{file: codexRollout, kind: kind}}}
	}
	torn := healed("torn_tail", format.KindTruncated, "salvage", codexHealthyLines(1, 53))
	live := torn
	live.src, live.setup = "live_writer_lock", nil
	meta := healed("torn_session_meta", format.KindMalformedRecord, "rebuild-header", codexRebuiltHeader)
	meta.files[0] = withLG(meta.files[0], "last-good")
	nul := healed("nul_tail", format.KindTruncated, "salvage", codexHealthyLines(1, 51))
	nul.files[0] = withLG(nul.files[0], "last-good")
	empty := refused("empty", format.KindEmpty)
	empty.files[0] = withLG(empty.files[0], "last-good")
	missing := healed("last_record_missing_ordinal", format.KindSchema, "add-ordinals", nil)
	missing.files[0].want = codexHealthy
	return []sampleCase{
		{app: "codex", src: "healthy", preset: "codex"},
		torn,
		healed("glued_record", format.KindMalformedRecord, "salvage", codexHealthyWithout(41)),
		healed("bad_middle_line", format.KindMalformedRecord, "salvage", codexHealthyWithout(31)),
		missing,
		refused("reused_ordinals", format.KindSchema),
		meta,
		nul,
		empty,
		live,
		healed("app_sealed_torn_tail", format.KindMalformedRecord, "salvage", codexSealedStubDropped),
	}
}

// codexThreadLockFile puts the thread's lock file (0 bytes) where a heal's flock of it creates
// it, as Codex does, so that the case's "nothing else appeared" check holds; the file's
// presence means nothing (live_writer_lock has it from the start).
func codexThreadLockFile(t *testing.T, root string) {
	if err := os.WriteFile(filepath.Join(root, codexLocks, codexThread+".lock"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// codexLines is the healthy sample's lines, each with its '\n'.
func codexLines(t *testing.T) [][]byte {
	t.Helper()
	lines := bytes.SplitAfter(read(t, filepath.Join(samples, codexHealthy)), []byte("\n"))
	if len(lines) != 55 || len(lines[54]) != 0 {
		t.Fatalf("healthy sample has %d lines, want 54", len(lines)-1)
	}
	return lines[:54]
}

func codexExpect(t *testing.T, healed, want []byte, what string) {
	t.Helper()
	if !bytes.Equal(healed, want) {
		t.Errorf("healed rollout (%d bytes) is not %s (%d bytes)", len(healed), what, len(want))
	}
}

// codexHealthyLines: the healed rollout is the healthy sample's lines from..to (1-based).
func codexHealthyLines(from, to int) func(t *testing.T, orig, healed []byte) {
	return func(t *testing.T, _, healed []byte) {
		codexExpect(t, healed, bytes.Join(codexLines(t)[from-1:to], nil), "the healthy sample's lines")
	}
}

// codexHealthyWithout: the healed rollout is the healthy sample without line n.
func codexHealthyWithout(n int) func(t *testing.T, orig, healed []byte) {
	return func(t *testing.T, _, healed []byte) {
		lines := codexLines(t)
		codexExpect(t, healed, bytes.Join(slices.Delete(lines, n-1, n), nil), "the healthy sample without one line")
	}
}

// codexSealedStubDropped: the healthy sample's lines 1–53, then the records the app appended
// after the stub it sealed (the damaged file's lines 55 on), byte for byte.
func codexSealedStubDropped(t *testing.T, orig, healed []byte) {
	lines := codexLines(t)
	stub := bytes.Join(lines[:53], nil)
	rest := bytes.SplitAfterN(orig[len(stub):], []byte("\n"), 2)
	if !bytes.HasPrefix(orig, stub) || len(rest) != 2 || len(lines[53]) <= len(rest[0]) {
		t.Fatal("the sample is not the healthy lines 1–53 and a stub")
	}
	codexExpect(t, healed, append(stub, rest[1]...), "lines 1–53 and the appended records")
}

// codexRebuiltHeader: line 1 is a rebuilt session_meta of ordinal 0 with the file name's id,
// and every byte from line 2 on is the damaged file's.
func codexRebuiltHeader(t *testing.T, orig, healed []byte) {
	nl := bytes.IndexByte(healed, '\n')
	on := bytes.IndexByte(orig, '\n')
	if nl < 0 || on < 0 || !bytes.Equal(healed[nl:], orig[on:]) {
		t.Fatal("bytes after line 1 changed")
	}
	v, err := jsonv.Parse(healed[:nl], jsonv.Dialect{})
	if err != nil {
		t.Fatalf("line 1: %v", err)
	}
	p := v.Get("payload")
	if v.Get("type").Str != "session_meta" || v.Get("ordinal") == nil || v.Get("ordinal").Int != 0 || p.Get("id").Str != codexThread {
		t.Errorf("line 1 is not session_meta of ordinal 0 and id %s: %s", codexThread, healed[:nl])
	}
	want := `{"timestamp":"2026-11-22T21:46:17.897Z","ordinal":0,"type":"session_meta","payload":{` +
		`"session_id":"` + codexThread + `","id":"` + codexThread + `","timestamp":"2026-11-22T21:46:17.862Z",` +
		`"cwd":"/tmp/demo/proj","originator":"codex_exec","cli_version":"0.169.0","source":"exec",` +
		`"model_provider":"mock","history_mode":"paginated"}}`
	if string(healed[:nl]) != want {
		t.Errorf("rebuilt line 1:\n%s\nwant\n%s", healed[:nl], want)
	}
}

// While another open file description holds the thread's flock (Codex's writer, LOCK_EX, or a
// fork reader, LOCK_SH), a heal is busy and changes nothing; once it is free the rollout is
// healed as torn_tail, and no lock file is ever unlinked.
func TestCodexLiveWriterLockHeldIsBusy(t *testing.T) {
	for _, how := range []int{unix.LOCK_EX, unix.LOCK_SH} {
		root := filepath.Join(t.TempDir(), "live_writer_lock")
		copyTree(t, filepath.Join(samples, "codex", "live_writer_lock"), root)
		lockPath := filepath.Join(root, codexLocks, codexThread+".lock")
		fd, err := unix.Open(lockPath, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.Flock(fd, how|unix.LOCK_NB); err != nil {
			t.Fatal(err)
		}
		e := testEngine(t, "codex", root)
		before := snapshot(t, root)
		for _, r := range runAll(t, e, true) {
			if r.Verdict != Busy || r.Action == ActionHealed {
				t.Errorf("flock %d held: %s %s (%s)", how, r.Verdict, r.Action, r.Reason)
			}
		}
		assertSame(t, before, snapshot(t, root), nil)
		unix.Flock(fd, unix.LOCK_UN)
		unix.Close(fd)
		for _, r := range runAll(t, e, true) {
			if r.Action != ActionHealed || r.Strategy != "salvage" {
				t.Errorf("flock let go: %s with %q (%s)", r.Action, r.Strategy, r.Reason)
			}
		}
		codexHealthyLines(1, 53)(t, nil, read(t, filepath.Join(root, codexRollout)))
		ents, _ := os.ReadDir(filepath.Join(root, codexLocks))
		if len(ents) != 2 {
			t.Errorf("thread-writer-locks holds %d files, want its 2", len(ents))
		}
	}
}

// A fork's history is its parent's first history_base.end_byte_offset bytes: a repair that
// would change any of them is not made; one that keeps them is.
func TestCodexForkPrefixIsKept(t *testing.T) {
	for _, c := range []struct {
		end      int
		strategy string
	}{{59351, ""}, {59185, "salvage"}} {
		root := filepath.Join(t.TempDir(), "torn_tail")
		copyTree(t, filepath.Join(samples, "codex", "torn_tail"), root)
		codexThreadLockFile(t, root)
		child := "01a20539-0000-7000-8000-000000000001"
		rec := `{"timestamp":"2026-11-23T10:00:00.000Z","ordinal":%d,"type":%q,"payload":{%s}}` + "\n"
		meta := fmt.Sprintf(`"id":%q,"history_mode":"paginated","history_base":{"thread_id":%q,"end_ordinal_exclusive":53,"end_byte_offset":%d}`, child, codexThread, c.end)
		p := filepath.Join(root, "home/.codex/sessions/2026/11/23/rollout-2026-11-23T10-00-00-"+child+".jsonl")
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(fmt.Sprintf(rec, 53, "session_meta", meta)+fmt.Sprintf(rec, 54, "event_msg", "")), 0o644)
		rs := reportsByFile(t, root, runAll(t, testEngine(t, "codex", root), true))
		r := rs[codexRollout]
		if c.strategy == "" && r.Action == ActionHealed {
			t.Errorf("end_byte_offset %d: healed with %s, changing the fork's bytes", c.end, r.Strategy)
		}
		if c.strategy != "" && (r.Action != ActionHealed || r.Strategy != c.strategy) {
			t.Errorf("end_byte_offset %d: %s %q (%s), want healed with %s", c.end, r.Action, r.Strategy, r.Reason, c.strategy)
		}
		if cr := rs[strings.TrimPrefix(p, root+"/")]; cr.Verdict != Healthy {
			t.Errorf("the fork is %s (%s)", cr.Verdict, cr.Detail)
		}
	}
}
