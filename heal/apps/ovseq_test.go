package apps

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/format"
)

// OpenViking's messages are judged record by record (a big file streaming): the verdict is
// the whole-lines checklist's it replaced (kept below as refCheckOVMessages), held whole and
// streamed, on every sample's messages damaged at random — ids dropped, repeated or already
// archived, roles and parts taken away, lines repeated or moved.
func TestOVMessagesJudgedAsWholeChecklist(t *testing.T) {
	var paths []string
	filepath.WalkDir("../testdata/samples/openviking", func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "messages.jsonl" && !strings.Contains(p, "/history/") {
			paths = append(paths, p)
		}
		return nil
	})
	slices.Sort(paths)
	if len(paths) < 5 {
		t.Fatalf("%d sessions found", len(paths))
	}
	rng := rand.New(rand.NewPCG(13, 17))
	kinds := map[string]int{}
	for _, p := range paths {
		orig, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		// The archived messages of the session, to put back among its live ones.
		var archived []string
		filepath.WalkDir(filepath.Join(filepath.Dir(p), "history"), func(q string, d os.DirEntry, err error) error {
			if b, rerr := os.ReadFile(q); err == nil && d.Name() == "messages.jsonl" && rerr == nil {
				archived = append(archived, strings.SplitAfter(string(b), "\n")...)
			}
			return nil
		})
		for range 80 {
			lines := strings.SplitAfter(string(orig), "\n")
			for range 1 + rng.IntN(3) {
				i := rng.IntN(len(lines))
				switch rng.IntN(7) {
				case 0:
					lines[i] = strings.Replace(lines[i], `"id"`, `"idx"`, 1)
				case 1:
					lines = append(lines, lines[i])
				case 2:
					lines[i] = strings.Replace(lines[i], `"role": "`, `"role": "x`, 1)
				case 3:
					lines[i] = strings.Replace(lines[i], `"parts"`, `"partz"`, 1)
				case 4:
					if len(archived) > 0 {
						lines = slices.Insert(lines, i, archived[rng.IntN(len(archived))])
					}
				case 5:
					j := rng.IntN(len(lines))
					lines[i], lines[j] = lines[j], lines[i]
				case 6:
					lines = slices.Insert(lines, i, "\n")
				}
			}
			data := []byte(strings.Join(lines, ""))
			if len(data) > 0 && data[len(data)-1] != '\n' {
				data = append(data, '\n')
			}
			split := format.Split(data, ovMessages{})
			if slices.ContainsFunc(split, func(l format.Line) bool { return l.Err != nil }) || len(bytes.TrimSpace(data)) == 0 {
				continue // syntax: judged before any checklist, as before
			}
			want := refCheckOVMessages(format.File{Path: p}, split)
			got := format.Inspect(ovMessages{}, format.File{Path: p}, data)
			at, err := format.InspectAt(ovMessages{}, p, bytes.NewReader(data), int64(len(data)))
			if err != nil || !reflect.DeepEqual(got, want) || !reflect.DeepEqual(at, want) {
				t.Fatalf("%s: whole-lines checklist %+v, held %+v, streamed %+v (%v)\ninput %q", p, want, got, at, err, data)
			}
			// Lines over a window (the archives' too) read as their records' skeletons.
			restore := format.SetLineWindow(40)
			long, err := format.InspectAt(ovMessages{}, p, bytes.NewReader(data), int64(len(data)))
			restore()
			if err != nil || !reflect.DeepEqual(long, want) {
				t.Fatalf("%s: whole-lines checklist %+v, lines over 40 bytes long %+v (%v)", p, want, long, err)
			}
			kinds[want.Kind]++
		}
	}
	t.Logf("verdicts: %v", kinds)
	for _, k := range []string{"", format.KindSchema, format.KindStaleLiveRecords} {
		if kinds[k] == 0 {
			t.Errorf("no verdict of kind %q", k)
		}
	}
}

// The whole-lines checklist the record-by-record one replaced.
func refCheckOVMessages(f format.File, lines []format.Line) format.Verdict {
	seen := map[string]bool{}
	for i, l := range lines {
		if l.Blank {
			continue
		}
		id := l.Val.Get("id")
		if !isStr(id) {
			return format.Damage(format.KindSchema, int64(l.Start), "line %d: message has no string id", i+1)
		}
		if r := l.Val.Get("role"); !isStr(r) || (r.Str != "user" && r.Str != "assistant") {
			return format.Damage(format.KindSchema, int64(l.Start), "line %d: role is not user or assistant", i+1)
		}
		if !isArr(l.Val.Get("parts")) && l.Val.Get("content") == nil {
			return format.Damage(format.KindSchema, int64(l.Start), "line %d: message has neither parts nor content", i+1)
		}
		if seen[id.Str] {
			return format.Damage(format.KindSchema, int64(l.Start), "line %d: duplicate message id %s", i+1, id.Str)
		}
		seen[id.Str] = true
	}
	archived := ovArchivedIDs(filepath.Dir(f.Path))
	stale := 0
	first := -1
	for _, l := range lines {
		if l.Val != nil && archived[strOf(l.Val.Get("id"))] {
			stale++
			if first < 0 {
				first = l.Start
			}
		}
	}
	if stale > 0 {
		return format.Damage(format.KindStaleLiveRecords, int64(first), "%d live messages are already archived in a finished commit", stale)
	}
	return format.OK()
}

// .meta.json's count is set as a splice of the file, as ovSetCount sets it in the bytes held:
// the top-level message_count only (the last one where the key is repeated), a number only.
func TestOVCountSpliceIsSetCount(t *testing.T) {
	metas := []string{
		`{"message_count": 3}`,
		`{"message_count": 2}`,
		"{\n  \"session_id\": \"s\",\n  \"message_count\": 17,\n  \"x\": {\"message_count\": 9}\n}",
		`{"message_count": 1, "message_count": 5}`,
		`{"message_count": 5, "message_count": "7"}`,
		`{"message_count": 3.0}`,
		`{"message_count": -0}`,
		`{"message_count": 1e0}`,
		`{"a": [{"message_count": 1}]}`,
		`{"message_count": null}`,
		`{"message_count": 3} x`,
		`[{"message_count": 3}]`,
		`{"message\u005fcount": 8}`,
		`{"message_count": 12345678901234567890}`,
		`{}`,
		``,
	}
	for _, m := range metas {
		for _, live := range []int{0, 2, 3, 17} {
			want, ok := ovSetCount([]byte(m), live)
			if !ok {
				want = nil
			}
			sp, err := ovCountSplice(strings.NewReader(m), int64(len(m)), live)
			if err != nil {
				t.Fatalf("%q, %d: %v", m, live, err)
			}
			var got []byte
			if sp != nil {
				if got, err = sp.Bytes(strings.NewReader(m)); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%q, %d live: spliced %q, set %q", m, live, got, want)
			}
		}
	}
}
