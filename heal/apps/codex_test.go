package apps

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
	"github.com/sessionmedic/sessionmedic/heal/lock"
	"golang.org/x/sys/unix"
)

const (
	cxID      = "01a20539-677f-7710-87e4-54a740761238"
	cxName    = "rollout-2026-11-22T21-46-17-" + cxID + ".jsonl"
	cxSamples = "../testdata/samples/codex/"
	cxRel     = "home/.codex/sessions/2026/11/22/" + cxName
)

func cxMeta(extra string) string {
	return `{"timestamp":"t0","ordinal":0,"type":"session_meta","payload":{"id":"` + cxID + `","cwd":"/p"` + extra + `}}` + "\n"
}

func cxRec(ord string) string {
	if ord == "" {
		return `{"timestamp":"t","type":"event_msg","payload":{}}` + "\n"
	}
	return `{"timestamp":"t","ordinal":` + ord + `,"type":"event_msg","payload":{}}` + "\n"
}

func cxSample(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(cxSamples + name + "/" + cxRel)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCodexChecklist(t *testing.T) {
	legacyMeta := `{"timestamp":"t0","type":"session_meta","payload":{"id":"` + cxID + `"}}` + "\n"
	fork := `,"history_base":{"thread_id":"p","end_ordinal_exclusive":10,"end_byte_offset":5}`
	forkMeta := strings.Replace(cxMeta(fork), `"ordinal":0`, `"ordinal":10`, 1)
	cases := []struct {
		name, data, kind string
		warn             bool
	}{
		{"contiguous", cxMeta("") + cxRec("1") + cxRec("2"), "", false},
		{"paginated header only", cxMeta(`,"history_mode":"paginated"`), "", false},
		{"gap", cxMeta("") + cxRec("1") + cxRec("3"), "", true},
		{"middle record without ordinal", cxMeta("") + cxRec("1") + cxRec("") + cxRec("3"), "", true},
		{"last record without ordinal", cxMeta("") + cxRec("1") + cxRec(""), format.KindSchema, false},
		{"duplicate", cxMeta("") + cxRec("1") + cxRec("1"), format.KindSchema, false},
		{"decreasing", cxMeta("") + cxRec("2") + cxRec("1"), format.KindSchema, false},
		{"string ordinal", cxMeta("") + cxRec(`"1"`), format.KindSchema, false},
		{"fractional ordinal", cxMeta("") + cxRec("1.0"), format.KindSchema, false},
		{"negative ordinal", cxMeta("") + cxRec("-1"), format.KindSchema, false},
		{"header ordinal not 0", strings.Replace(cxMeta(""), `"ordinal":0`, `"ordinal":1`, 1) + cxRec("2"), format.KindSchema, false},
		{"paginated header without ordinal", strings.Replace(cxMeta(`,"history_mode":"paginated"`), `"ordinal":0,`, "", 1), format.KindSchema, false},
		{"legacy", legacyMeta + cxRec("") + cxRec(""), "", false},
		{"legacy with an ordinal", legacyMeta + cxRec("") + cxRec("1"), format.KindSchema, false},
		{"line 1 not session_meta", cxRec("0") + cxMeta(""), format.KindSchema, false},
		{"header without id", `{"timestamp":"t0","ordinal":0,"type":"session_meta","payload":{}}` + "\n", format.KindSchema, false},
		{"id not the file name's", strings.Replace(cxMeta(""), cxID, "01a20539-677f-7710-87e4-000000000000", 1), format.KindSchema, false},
		{"fork", forkMeta + cxRec("11") + cxRec("12"), "", false},
		{"fork header of ordinal 0", cxMeta(fork) + cxRec("10"), "", false},
		{"fork numbered from 0", forkMeta + cxRec("1"), format.KindSchema, false},
		{"no record", "\n\n", format.KindEmpty, false},
	}
	p := codexLog{}
	for _, c := range cases {
		f := format.File{Path: "/h/sessions/2026/11/22/" + cxName}
		v := format.Inspect(p, f, []byte(c.data))
		if v.Kind != c.kind || (len(v.Warnings) > 0) != c.warn {
			t.Errorf("%s: %s %s %q, want %q (warning %v)", c.name, v.Status, v.Kind, v.Detail, c.kind, c.warn)
		}
		// The record-at-a-time checklist never finds damage the full one does not.
		s := format.StreamLines(bufio.NewReader(strings.NewReader(c.data)), p)
		if s.Kind != "" && s.Kind != v.Kind {
			t.Errorf("%s: streaming finds %s %q, the full check %q", c.name, s.Kind, s.Detail, v.Kind)
		}
	}
}

func TestCodexSamplesVerdicts(t *testing.T) {
	for name, kind := range map[string]string{
		"healthy": "", "reused_ordinals": format.KindSchema, "last_record_missing_ordinal": format.KindSchema,
		"torn_tail": format.KindTruncated, "glued_record": format.KindMalformedRecord, "empty": format.KindEmpty,
	} {
		v := format.Inspect(codexLog{}, format.File{Path: "/x/" + cxName}, cxSample(t, name))
		if v.Kind != kind {
			t.Errorf("%s: %s %q, want %q", name, v.Kind, v.Detail, kind)
		}
	}
}

func TestCodexAppendedOK(t *testing.T) {
	p := codexLog{}
	for rec, want := range map[string]bool{
		cxRec("54"): true, cxRec(""): false, cxRec(`"54"`): false, cxRec("-1"): false,
		strings.TrimSuffix(cxMeta(""), "\n"): false,
	} {
		if got := p.AppendedOK([]byte(strings.TrimSuffix(rec, "\n"))); got != want {
			t.Errorf("AppendedOK(%s) = %v", rec, got)
		}
	}
}

func TestCodexAddOrdinals(t *testing.T) {
	p := codexLog{}
	if got := addOrdinals(p, "", cxSample(t, "last_record_missing_ordinal")); !bytes.Equal(got, cxSample(t, "healthy")) {
		t.Errorf("last_record_missing_ordinal: not the healthy sample (%d bytes)", len(got))
	}
	in := cxMeta("") + cxRec("1") + cxRec("") + cxRec("3") + cxRec("") + "\n" + cxRec("")
	want := cxMeta("") + cxRec("1") + cxRec("") + cxRec("3") + cxRec("4") + "\n" + cxRec("5")
	if got := addOrdinals(p, "", []byte(in)); string(got) != want {
		t.Errorf("two trailing records:\n%s\nwant\n%s", got, want)
	}
	for name, in := range map[string]string{
		"healthy":              cxMeta("") + cxRec("1"),
		"legacy":               strings.Replace(cxMeta(""), `"ordinal":0,`, "", 1) + cxRec(""),
		"timestamp not first":  cxMeta("") + cxRec("1") + `{"type":"x","timestamp":"t","payload":{}}` + "\n",
		"non-integer previous": cxMeta("") + cxRec(`"1"`) + cxRec(""),
	} {
		if got := addOrdinals(p, "", []byte(in)); got != nil {
			t.Errorf("%s: added ordinals:\n%s", name, got)
		}
	}
}

func TestCodexRebuildHeader(t *testing.T) {
	p := codexLog{}
	torn := cxSample(t, "torn_session_meta")
	nl := bytes.IndexByte(torn, '\n') + 1
	dir := filepath.Join(t.TempDir(), "sessions", "2026", "11", "22")
	os.MkdirAll(dir, 0o755)
	path := filepath.Join(dir, cxName)
	os.WriteFile(path, torn, 0o644)

	full := rebuildHeader(p, path, torn)
	if full == nil || !bytes.Equal(full[bytes.IndexByte(full, '\n')+1:], torn[nl:]) {
		t.Fatalf("rebuild over the torn line changed other bytes (%d bytes)", len(full))
	}
	if v := format.Inspect(p, format.File{Path: path}, full); v.Status != format.Healthy {
		t.Fatalf("rebuilt rollout: %s", v)
	}
	// From a salvage that dropped the torn line: the same header, its values read from the file.
	if got := rebuildHeader(p, path, torn[nl:]); !bytes.Equal(got, full) {
		t.Errorf("rebuild from the salvage differs:\n%.400s", got)
	}
	// Without the torn line anywhere: only what the records and the name hold.
	os.WriteFile(path, torn[nl:], 0o644)
	got := rebuildHeader(p, path, torn[nl:])
	want := `{"timestamp":"2026-11-22T21:46:17.897Z","ordinal":0,"type":"session_meta","payload":{"session_id":"` + cxID +
		`","id":"` + cxID + `","timestamp":"2026-11-22T21:46:17.897Z","cwd":"/tmp/demo/proj","history_mode":"paginated"}}` + "\n"
	if !bytes.HasPrefix(got, []byte(want)) || len(got) != len(want)+len(torn)-nl {
		t.Errorf("rebuild without the torn line:\n%.400s", got)
	}
	legacy := `{"timestamp":"t1","type":"turn_context","payload":{"cwd":"/w"}}` + "\n"
	if got := rebuildHeader(p, path, []byte(legacy)); string(got) != `{"timestamp":"t1","type":"session_meta","payload":{"session_id":"`+cxID+`","id":"`+cxID+`","timestamp":"t1","cwd":"/w"}}`+"\n"+legacy {
		t.Errorf("legacy rebuild:\n%s", got)
	}
	for name, in := range map[string]string{
		"header present":     cxMeta("") + cxRec("1"),
		"no cwd":             "{\"timestamp\":\"t0\",\"ordinal\":0,\"typ\n" + cxRec("1"),
		"a fork's records":   "{\"timestamp\":\"t0\",\"ordinal\":0,\"typ\n" + `{"timestamp":"t","ordinal":11,"type":"turn_context","payload":{"cwd":"/w"}}` + "\n",
		"only the torn line": "{\"timestamp\":\"t0\",\"ordinal\":0,\"typ",
	} {
		if got := rebuildHeader(p, path, []byte(in)); got != nil {
			t.Errorf("%s: rebuilt:\n%s", name, got)
		}
	}
	if got := rebuildHeader(p, "/x/rollout-no-id.jsonl", torn); got != nil {
		t.Error("rebuilt without an id in the file name")
	}
}

// Wherever the header line is cut, the members taken are complete string members of its
// payload, byte for byte.
func TestCodexPrefixMembersNeverTakeACutValue(t *testing.T) {
	line := cxSample(t, "healthy")
	line = line[:bytes.IndexByte(line, '\n')]
	root, err := jsonv.Parse(line, jsonv.Dialect{})
	if err != nil {
		t.Fatal(err)
	}
	payload := root.Get("payload")
	all := codexPrefixMembers(line)
	if len(all) != 10 || string(all["cwd"]) != `"/tmp/demo/proj"` {
		t.Fatalf("whole line: %d members %q", len(all), all)
	}
	for n := 0; n < len(line); n += 1 + n/1000 {
		for k, raw := range codexPrefixMembers(line[:n]) {
			if v := payload.Get(k); v == nil || v.Type != jsonv.String || !bytes.Equal(raw, v.Raw(line)) {
				t.Fatalf("cut at %d: member %s = %s is not the payload's", n, k, raw)
			}
		}
	}
	if m := codexPrefixMembers([]byte(`{"timestamp":"t","type":"event_msg","payload":{"cwd":"/x"}}`)); len(m) != 0 {
		t.Errorf("members taken from a record that is not session_meta: %q", m)
	}
}

func cxWrite(t *testing.T, path, data string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func cxChild(parent, id string, end int) string {
	return `{"timestamp":"t","ordinal":3,"type":"session_meta","payload":{"id":"` + id +
		`","history_base":{"thread_id":"` + parent + `","end_ordinal_exclusive":3,"end_byte_offset":` + fmt.Sprint(end) + `}}}` + "\n"
}

func TestCodexKeptPrefix(t *testing.T) {
	home := filepath.Join(t.TempDir(), ".codex")
	parent := filepath.Join(home, "sessions/2026/11/22", cxName)
	cxWrite(t, parent, cxMeta(""))
	if got := (codexLog{}).KeptPrefix(parent); got != 0 {
		t.Fatalf("no child: %d", got)
	}
	child := func(dir, id string) string {
		return filepath.Join(home, dir, "rollout-2026-11-23T10-00-00-"+id+".jsonl")
	}
	cxWrite(t, child("sessions/2026/11/23", "01a20539-0000-7000-8000-000000000001"), cxChild(cxID, "c1", 1200))
	cxWrite(t, child("archived_sessions", "01a20539-0000-7000-8000-000000000002"), cxChild(cxID, "c2", 2400))
	cxWrite(t, child("sessions/2026/11/23", "01a20539-0000-7000-8000-000000000003"), cxChild("another", "c3", 9000))
	cxWrite(t, child("sessions/2026/11/23", "01a20539-0000-7000-8000-000000000004"), strings.TrimSuffix(cxChild(cxID, "c4", 7000), "\n"))
	cxWrite(t, filepath.Join(home, "sessions/2026/11/23/notes-"+cxID+".jsonl"), cxChild(cxID, "c5", 8000))
	if got := (codexLog{}).KeptPrefix(parent); got != 2400 {
		t.Errorf("KeptPrefix = %d, want 2400 (the archived child's)", got)
	}
	// Through a symlinked rule root, the home is where it points.
	link := filepath.Join(t.TempDir(), "sessions")
	os.Symlink(filepath.Join(home, "sessions"), link)
	if got := (codexLog{}).KeptPrefix(filepath.Join(link, "2026/11/22", cxName)); got != 2400 {
		t.Errorf("through a symlink: KeptPrefix = %d", got)
	}
}

func TestCodexLock(t *testing.T) {
	home := filepath.Join(t.TempDir(), ".codex")
	path := filepath.Join(home, "sessions/2026/11/22", cxName)
	cxWrite(t, path, cxMeta(""))
	ctx := context.Background()
	l, err := lockCodex(ctx, path, codexLog{}, format.LockParams{})
	if _, ok := l.(format.Unlocked); err != nil || !ok {
		t.Fatalf("home without thread-writer-locks: %T %v", l, err)
	}
	locks := filepath.Join(home, "thread-writer-locks")
	if _, err := os.Stat(locks); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("thread-writer-locks was created")
	}
	os.Mkdir(locks, 0o755)
	// A rule root that is a symlink named sessions still locks in the real home.
	link := filepath.Join(t.TempDir(), "sessions")
	os.Symlink(filepath.Join(home, "sessions"), link)
	for _, p := range []string{path, filepath.Join(link, "2026/11/22", cxName)} {
		l, err := lockCodex(ctx, p, codexLog{}, format.LockParams{})
		if _, ok := l.(format.Unlocked); err != nil || ok {
			t.Fatalf("%s: %T %v", p, l, err)
		}
		fd, _ := unix.Open(filepath.Join(locks, cxID+".lock"), unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err := unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB); err == nil {
			t.Errorf("%s: the thread lock is not held", p)
		}
		unix.Close(fd)
		l.Release()
	}
	fd, _ := unix.Open(filepath.Join(locks, cxID+".lock"), unix.O_RDWR|unix.O_CLOEXEC, 0)
	defer unix.Close(fd)
	unix.Flock(fd, unix.LOCK_SH)
	if _, err := lockCodex(ctx, path, codexLog{}, format.LockParams{Wait: 30 * time.Millisecond}); !errors.Is(err, lock.ErrBusy) {
		t.Errorf("fork reader holds LOCK_SH: %v, want busy", err)
	}
	if l, err := lockCodex(ctx, "/elsewhere/"+cxName, codexLog{}, format.LockParams{}); err != nil || l != (format.Unlocked{}) {
		t.Errorf("outside a Codex home: %T %v", l, err)
	}
}
