package format_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/apps"
	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// copawDoc is a CoPaw session of about size bytes as the app writes it (copaw.md: one line,
// Python's separators): [msg, marks] pairs of prose, some with escapes and non-ASCII text.
func copawDoc(rng *rand.Rand, size int) []byte {
	words := []string{"the", "file", "was", "fine", "until", "it", "was", "not", "said", "run", "\\\"quoted\\\"", "naïve", "日本語", "\\n", "tab\\t", "café"}
	var b bytes.Buffer
	b.WriteString(`{"agent": {"memory": {"_compressed_summary": "", "content": [`)
	for i := 0; b.Len() < size-200; i++ {
		role := []string{"user", "assistant"}[i%2]
		if i > 0 {
			b.WriteString(", ")
		}
		var text strings.Builder
		for range 3 + rng.Intn(40) {
			text.WriteString(words[rng.Intn(len(words))])
			text.WriteByte(' ')
		}
		marks := ""
		if rng.Intn(4) == 0 {
			marks = `"hint"`
		}
		fmt.Fprintf(&b, `[{"id": "m%07d", "name": %q, "role": %q, "content": "%s", "metadata": {}, "timestamp": "2026-11-21 07:42:09.662"}, [%s]]`, i, role, role, text.String(), marks)
	}
	b.WriteString(`]}, "toolkit": {"active_groups": []}, "name": "QwenPaw", "_sys_prompt": "You are QwenPaw.", "plan_notebook": {"current_plan": null, "storage": {"plans": {}}}}}`)
	return b.Bytes()
}

// BenchmarkCopawDocument: the check of one 7.5 KB CoPaw session, held whole (a small file's)
// and streamed from a reader (a big file's), the same document each time.
func BenchmarkCopawDocument(b *testing.B) {
	p := apps.Registry().Profile("copaw", "s.json")
	doc := copawDoc(rand.New(rand.NewSource(1)), 7500)
	f := format.File{Path: "s.json"}
	if v := format.Inspect(p, f, doc); v.Status != format.Healthy || len(v.Warnings) > 0 {
		b.Fatalf("generated document judged %+v", v)
	}
	b.Run("held", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		b.ReportAllocs()
		for b.Loop() {
			format.Inspect(p, f, doc)
		}
	})
	b.Run("streamed", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := format.InspectDocAt(p, "s.json", bytes.NewReader(doc), int64(len(doc))); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// recorder is an app's document profile whose checklist also writes down each element it is
// handed, as text, while it has it.
type recorder struct {
	format.Profile
	elems *[]string
}

func (r recorder) DocShape() jsonv.Shape { return r.Profile.(format.DocChecker).DocShape() }

func (r recorder) NewDocCheck(f format.File) format.DocCheck {
	return recordCheck{r.Profile.(format.DocChecker).NewDocCheck(f), r.elems}
}

type recordCheck struct {
	format.DocCheck
	elems *[]string
}

func (c recordCheck) Elem(e jsonv.Elem) {
	*c.elems = append(*c.elems, fmt.Sprintf("in %v@%d [%d] %q@%d %s", e.In.Type, e.In.Start, e.Index, e.Key, e.KeyStart, valueText(e.Val)))
	c.DocCheck.Elem(e)
}

// valueText is every field of every node of v's tree, as text.
func valueText(v *jsonv.Value) string {
	if v == nil {
		return "nil"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "{%v %d %d %v %q %v %v %d [", v.Type, v.Start, v.End, v.Bool, v.Str, v.Num, v.IsInt, v.Int)
	fmt.Fprintf(&b, "items %v:", v.Items == nil)
	for _, it := range v.Items {
		b.WriteString(valueText(it))
	}
	fmt.Fprintf(&b, "] [keys %v:", v.Keys == nil)
	for _, m := range v.Keys {
		fmt.Fprintf(&b, "%q@%d=%s", m.Key, m.KeyStart, valueText(m.Val))
	}
	b.WriteString("]}")
	return b.String()
}

// docCheck is what a check of a document gave: verdict, records, error, each element.
type docCheck struct {
	v       format.Verdict
	records int
	err     error
	elems   []string
}

// checkDocArena: the check of data (valid) as p's document, its elements built in an arena,
// held whole and streamed, gives the verdict, records and elements the check gives with each
// element in nodes of its own; the verdict is returned.
func checkDocArena(t *testing.T, p format.Profile, path string, data []byte) format.Verdict {
	t.Helper()
	f := format.File{Path: path}
	run := func(check func(p format.Profile) (format.Verdict, int, error)) docCheck {
		var c docCheck
		c.v, c.records, c.err = check(recorder{p, &c.elems})
		return c
	}
	want := run(func(p format.Profile) (format.Verdict, int, error) { return format.CheckDocFresh(p, f, data) })
	held := run(func(p format.Profile) (format.Verdict, int, error) { return format.CheckDocHeld(p, f, data) })
	streamed := run(func(p format.Profile) (format.Verdict, int, error) {
		return format.CheckDocStreamed(p, f, bytes.NewReader(data), int64(len(data)))
	})
	for _, got := range []struct {
		how string
		c   docCheck
	}{{"held", held}, {"streamed", streamed}} {
		if !reflect.DeepEqual(got.c, want) {
			t.Fatalf("%s: %s in an arena:\n%+v\nwith elements of their own:\n%+v", path, got.how, got.c, want)
		}
	}
	// The profile itself, unwrapped: its verdict too.
	v, n, err := format.CheckDocHeld(p, f, data)
	if !reflect.DeepEqual(v, want.v) || n != want.records || err != want.err {
		t.Fatalf("%s: %+v %d %v, recorded %+v %d %v", path, v, n, err, want.v, want.records, want.err)
	}
	return want.v
}

// Every sample document of the apps' checklists is judged, element by element, the same in
// an arena as with elements of their own.
func TestDocArenaSamples(t *testing.T) {
	reg := apps.Registry()
	root := "../testdata/samples"
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		app, _, _ := strings.Cut(filepath.ToSlash(strings.TrimPrefix(path, root+string(filepath.Separator))), "/")
		if !reg.Has(app) {
			return nil
		}
		p := reg.Profile(app, path)
		if p == nil || !format.IsDocument(p) {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if jsonv.Valid(data, p.Dialect()) != nil {
			return nil
		}
		checkDocArena(t, p, path, data)
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 20 {
		t.Fatalf("only %d sample documents checked", n)
	}
}

// randCopaw is a CoPaw session whose history holds what the checklist must tell apart: pairs,
// bare messages, pairs of other lengths, marks that are not strings nor a list, messages
// lacking a member, scalars, huge texts now and then; the last history of a duplicated name.
func randCopaw(rng *rand.Rand) []byte {
	var b strings.Builder
	history := func() {
		b.WriteString(`[`)
		for i := range rng.Intn(12) {
			if i > 0 {
				b.WriteString(", ")
			}
			msg := `{"id": "m", "name": "u", "role": "user", "content": "h\u00e9\"i", "metadata": {"k": [1]}}`
			if rng.Intn(20) == 0 {
				msg = []string{`{"name": "u", "content": "x"}`, `{"role": "u", "content": [], "name": null}`, `[]`, `"s"`, `{"name": 1, "content": 2, "role": 3, "name": 4}`}[rng.Intn(5)]
			}
			if rng.Intn(30) == 0 {
				msg = `{"name": "u", "role": "user", "content": "` + strings.Repeat(`long \" text é `, 5000+rng.Intn(70000)) + `"}`
			}
			switch rng.Intn(12) {
			case 0:
				b.WriteString(msg)
			case 1:
				fmt.Fprintf(&b, `[%s]`, msg)
			case 2:
				fmt.Fprintf(&b, `[%s, [], []]`, msg)
			case 3:
				fmt.Fprintf(&b, `[%s, ["a", 7]]`, msg)
			case 4:
				fmt.Fprintf(&b, `[%s, {"a": "b"}]`, msg)
			case 5:
				b.WriteString([]string{`1`, `null`, `"x"`, `{}`, `NaN`}[rng.Intn(5)])
			default:
				fmt.Fprintf(&b, `[%s, ["hint", "x\u00e9"]]`, msg)
			}
		}
		b.WriteString(`]`)
	}
	b.WriteString(`{"agent": {"memory": {"_compressed_summary": "", "content": `)
	history()
	if rng.Intn(5) == 0 {
		b.WriteString(`, "content": `)
		history()
	}
	b.WriteString(`}, "name": "QwenPaw"}`)
	if rng.Intn(8) == 0 {
		b.WriteString(`, "agent": {"memory": {"content": `)
		history()
		b.WriteString(`}}`)
	}
	b.WriteString(`}`)
	if rng.Intn(4) == 0 {
		return []byte(strings.ReplaceAll(b.String(), ", ", ",\n "))
	}
	return []byte(b.String())
}

// randPraison is a PraisonAI session whose messages are objects or not.
func randPraison(rng *rand.Rand) []byte {
	var b strings.Builder
	b.WriteString(`{"session_id": "s", "messages": [`)
	for i := range rng.Intn(10) {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString([]string{`{"role": "user", "content": "hi"}`, `{"role": "assistant", "content": "a\"b", "metadata": {}}`, `1`, `"m"`, `[{}]`}[rng.Intn(5)*rng.Intn(2)])
	}
	b.WriteString(`], "children_ids": []}`)
	return []byte(b.String())
}

// randStore is an OpenClaw sessions.json whose entries are sound or not.
func randStore(rng *rand.Rand) []byte {
	var b strings.Builder
	b.WriteString(`{`)
	for i := range rng.Intn(10) {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, `"agent:main:%d": %s`, i, []string{
			`{"sessionId": "0b5f6a1e-1", "updatedAt": 1795246942000, "chatType": "direct", "origin": {"label": "x"}}`,
			`{"sessionId": "../x", "updatedAt": 1}`, `{"sessionId": "ok", "updatedAt": "soon"}`, `{"updatedAt": 1}`, `7`,
		}[rng.Intn(5)*rng.Intn(2)])
	}
	b.WriteString(`}`)
	return []byte(b.String())
}

// Random documents of each app are judged, element by element, the same in an arena as with
// elements of their own; between them, sound and damaged ones.
func TestDocArenaRandom(t *testing.T) {
	reg := apps.Registry()
	rng := rand.New(rand.NewSource(5))
	dir := t.TempDir()
	for _, c := range []struct {
		app, name string
		doc       func(*rand.Rand) []byte
	}{
		{"copaw", "s.json", randCopaw},
		{"praisonai", "s.json", randPraison},
		{"openclaw", "sessions.json", randStore},
	} {
		path := filepath.Join(dir, c.app, c.name)
		p := reg.Profile(c.app, path)
		statuses := map[format.Status]int{}
		for range 300 {
			data := c.doc(rng)
			if err := jsonv.Valid(data, p.Dialect()); err != nil {
				t.Fatalf("%s: generated document is not valid: %v", c.app, err)
			}
			statuses[checkDocArena(t, p, path, data).Status]++
		}
		if statuses[format.Healthy] == 0 || statuses[format.Healthy] == 300 {
			t.Fatalf("%s: verdicts %v, want sound and damaged documents", c.app, statuses)
		}
	}
}
