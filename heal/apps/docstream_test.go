package apps

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

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// docProfiles are the apps' JSON documents with a checklist, by the sample files they judge.
type docProfile struct {
	app  string
	p    format.Profile
	file func(name string) bool
}

var docProfiles = []docProfile{
	{"copaw", copaw{}, func(n string) bool { return strings.HasSuffix(n, ".json") }},
	{"praisonai", praison{}, func(n string) bool { return praisonSessionRe.MatchString(n) }},
	{"openclaw", openclawStore{}, func(n string) bool { return n == "sessions.json" || strings.HasPrefix(n, "sessions.json.bak") }},
	{"openviking", ovMeta{}, func(n string) bool { return n == ".meta.json" }},
}

// Every sample document is judged the same held whole and streamed from its file: status,
// kind, offset, detail and warnings.
func TestDocumentsJudgedStreamingAsHeld(t *testing.T) {
	n := 0
	eachSampleDoc(t, func(dp docProfile, path string, data []byte) {
		if diff, judged := heldStreamedDiff(dp, path, data); !judged {
			t.Errorf("%s: not judged streaming", path)
		} else if diff != "" {
			t.Errorf("%s: %s", path, diff)
		}
		n++
	})
	if n < 20 || validWalked < 20 {
		t.Fatalf("only %d sample documents judged, %d walked alone", n, validWalked)
	}
}

// eachSampleDoc calls fn with every sample document of every profile of docProfiles.
func eachSampleDoc(t *testing.T, fn func(dp docProfile, path string, data []byte)) {
	t.Helper()
	for _, dp := range docProfiles {
		root := filepath.Join("../testdata/samples", dp.app)
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() || !dp.file(d.Name()) {
				return err
			}
			data, err := os.ReadFile(path)
			if err == nil {
				fn(dp, path, data)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// heldStreamedDiff says how data's verdict as the document at path, held whole, differs from
// its verdict streamed ("" for none); judged is false when it could not be judged streaming
// (a token over the streamed bound).
func heldStreamedDiff(dp docProfile, path string, data []byte) (diff string, judged bool) {
	held := format.Inspect(dp.p, format.File{Path: path}, data)
	streamed, err := format.InspectDocAt(dp.p, path, bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return "", false
	}
	if !reflect.DeepEqual(held, streamed) {
		return fmt.Sprintf("held %+v, streamed %+v", held, streamed), true
	}
	// A value the syntax pass accepts, walked by its checklist alone (a document's first
	// value, planned for its salvage): the same verdict.
	if jsonv.Valid(data, dp.p.Dialect()) == nil {
		walked, _, err := format.JudgeValidDocAt(dp.p, path, bytes.NewReader(data), int64(len(data)))
		if err != nil || !reflect.DeepEqual(walked, streamed) {
			return fmt.Sprintf("streamed %+v, walked alone %+v (%v)", streamed, walked, err), true
		}
		validWalked++
	}
	return "", true
}

// validWalked counts the documents heldStreamedDiff walked alone.
var validWalked int

// Every sample document damaged at random (cut short, a byte changed, bytes put in or taken
// out) is judged the same held whole and streamed: the streamed checklist walks a document
// beside its syntax pass, and one the syntax pass refuses is walked too, until it is stopped.
func TestDamagedDocumentsJudgedStreamingAsHeld(t *testing.T) {
	rng := rand.New(rand.NewSource(8))
	n := 0
	eachSampleDoc(t, func(dp docProfile, path string, orig []byte) {
		if len(orig) < 2 {
			return
		}
		for range 25 {
			data := bytes.Clone(orig)
			at := rng.Intn(len(data))
			switch rng.Intn(4) {
			case 0:
				data = data[:at]
			case 1:
				data[at] = []byte{'x', '"', '}', ']', ',', 0xff, 0}[rng.Intn(7)]
			case 2:
				data = append(data[:at], append([]byte(`"},{[`)[:1+rng.Intn(5)], data[at:]...)...)
			default:
				data = append(data[:at], data[at+1:]...)
			}
			if diff, judged := heldStreamedDiff(dp, path, data); diff != "" {
				t.Errorf("%s, damaged at %d: %s\ninput %q", path, at, diff, data)
			} else if judged {
				n++
			}
		}
	})
	if n < 500 {
		t.Fatalf("only %d damaged documents judged", n)
	}
}

// A name the app reads last-wins is judged by its last occurrence, wherever the walk met a
// problem in an earlier one; a problem in the last one is found though an earlier was fine.
func TestDocumentsDuplicateNamesLastWins(t *testing.T) {
	msg := `{"name":"u","role":"user","content":"hi"}`
	cases := []struct {
		p    format.Profile
		path string
		data string
		kind string
		recs int
	}{
		{copaw{}, "s.json", `{"agent":{"memory":{"content":[1]}},"agent":{"memory":{"content":[[` + msg + `,[]]]}}}`, "", 1},
		{copaw{}, "s.json", `{"agent":{"memory":{"content":[[` + msg + `,[]]]}},"agent":{"memory":{"content":[[` + msg + `,[]],2]}}}`, format.KindSchema, 2},
		{copaw{}, "s.json", `{"agent":{"memory":{"content":[1],"content":[]}}}`, "", 0},
		{copaw{}, "s.json", `{"agent":{"memory":{"content":[[` + msg + `,[7]]]}}}`, format.KindSchema, 1},
		{copaw{}, "s.json", `{"agent":{"memory":{"content":{"a":1}}}}`, format.KindSchema, 0},
		{copaw{}, "s.json", `[1,2]`, format.KindNotObject, 0},
		{praison{}, "p.json", `{"session_id":"p","messages":[1],"messages":[{},{}]}`, "", 2},
		{praison{}, "p.json", `{"session_id":"p","messages":[{}],"messages":[{},"x"]}`, format.KindSchema, 2},
		{openclawStore{}, "sessions.json", `{"a":{"sessionId":"x","updatedAt":1},"b":1}`, format.KindSchema, 2},
	}
	for i, tc := range cases {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tc.path)
			v := format.Inspect(tc.p, format.File{Path: path}, []byte(tc.data))
			if got := verdictKindOf(v); got != tc.kind {
				t.Fatalf("kind %q (%s), want %q", got, v.Detail, tc.kind)
			}
			if n := format.Records(tc.p, []byte(tc.data)); n != tc.recs {
				t.Errorf("Records = %d, want %d", n, tc.recs)
			}
		})
	}
}

// A document whose history holds messages over the walk's inline size and strings over its
// cut is judged as one with short ones: offsets of a later problem are the file's.
func TestDocumentsWithHugeMessages(t *testing.T) {
	big := strings.Repeat(`a\"é`, 600_000) // 3 MB of text with escapes and UTF-8
	var b strings.Builder
	b.WriteString(`{"agent":{"memory":{"content":[`)
	for i := 0; i < 5; i++ {
		fmt.Fprintf(&b, `[{"name":"u","role":"user","content":"%s","n":%d},["m"]],`, big, i)
	}
	bad := b.Len()
	b.WriteString(`[{"name":"u","role":"user"},[]]]}}}`)
	data := []byte(b.String())
	v, err := format.InspectDocAt(copaw{}, "s.json", bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if v.Kind != format.KindSchema || v.Offset != int64(bad+1) || !strings.Contains(v.Detail, `content[5] message has no "content"`) {
		t.Fatalf("got %+v, want schema damage at %d", v, bad+1)
	}
	if held := format.Inspect(copaw{}, format.File{Path: "s.json"}, data); !reflect.DeepEqual(held, v) {
		t.Fatalf("held %+v, streamed %+v", held, v)
	}
}

// FuzzDocumentsJudgedStreamingAsHeld: any bytes, as each app's document, are judged the same
// held whole and streamed (when a streamed pass can judge them), and neither crashes.
func FuzzDocumentsJudgedStreamingAsHeld(f *testing.F) {
	for i, dp := range docProfiles {
		root := filepath.Join("../testdata/samples", dp.app)
		filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() && dp.file(d.Name()) {
				if b, err := os.ReadFile(path); err == nil && len(b) < 64<<10 {
					f.Add(uint8(i), b)
				}
			}
			return nil
		})
	}
	names := map[string]string{"copaw": "default_console--default.json", "praisonai": "parent-chat.json", "openclaw": "sessions.json", "openviking": ".meta.json"}
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		dp := docProfiles[int(which)%len(docProfiles)]
		path := filepath.Join("/nonexistent", dp.app, "sessions", names[dp.app])
		if diff, _ := heldStreamedDiff(dp, path, data); diff != "" {
			t.Fatalf("%s: %s", dp.app, diff)
		}
	})
}

// TestFirstValueJudgedInThePass: of every sample document, and of each valid one with other
// bytes after it, the pass that judges it (format.JudgeDocFirstAt) judges its first value as
// a walk of that value alone does (JudgeValidDocAt of its bytes: the same verdict, warnings
// and records), where trailing bytes follow it; its own verdict is JudgeDocAt's, and it says
// where the value ends once, when it finds the trailing bytes.
func TestFirstValueJudgedInThePass(t *testing.T) {
	firsts := 0
	eachSampleDoc(t, func(dp docProfile, path string, orig []byte) {
		inputs := [][]byte{orig}
		if jsonv.Valid(orig, dp.p.Dialect()) == nil {
			for _, tail := range []string{"x", "\n}garbage\n", ` ,{"a": 1}`, `ion-2"}]}}` + "\n", "\n\n  \"s\"", "]"} {
				inputs = append(inputs, append(bytes.Clone(orig), tail...))
			}
		}
		for _, data := range inputs {
			r := bytes.NewReader(data)
			want, wj, werr := format.JudgeDocAt(dp.p, path, r, int64(len(data)))
			var told []int64
			got, gj, err := format.JudgeDocFirstAt(dp.p, path, r, int64(len(data)), func(end int64) { told = append(told, end) })
			if err != nil || werr != nil || !reflect.DeepEqual(got, want) || gj.FirstEnd != wj.FirstEnd || gj.Records != wj.Records {
				t.Fatalf("%s: JudgeDocFirstAt %+v %+v (%v), JudgeDocAt %+v %+v (%v)\ninput %q", path, got, gj, err, want, wj, werr, data)
			}
			if wj.FirstEnd <= 0 {
				if gj.First != nil || len(told) != 0 {
					t.Fatalf("%s: a first value judged (%+v, told %v) of a document without trailing bytes", path, gj.First, told)
				}
				continue
			}
			if len(told) != 1 || told[0] != wj.FirstEnd {
				t.Fatalf("%s: told the value's end %v, want once %d", path, told, wj.FirstEnd)
			}
			if gj.First == nil {
				t.Fatalf("%s: the first value of %q was not judged in the pass", path, data)
			}
			alone, aj, err := format.JudgeValidDocAt(dp.p, path, bytes.NewReader(data[:wj.FirstEnd]), wj.FirstEnd)
			if err != nil || !reflect.DeepEqual(gj.First.Verdict, alone) || gj.First.Records != aj.Records {
				t.Fatalf("%s: the first value judged in the pass %+v, alone %+v %+v (%v)\ninput %q", path, *gj.First, alone, aj, err, data)
			}
			firsts++
		}
	})
	if firsts < 50 {
		t.Fatalf("only %d first values judged", firsts)
	}
}
