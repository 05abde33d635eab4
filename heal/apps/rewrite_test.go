package apps

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
	"github.com/sessionmedic/sessionmedic/internal/resolve"
)

// The line rewrites (rebuild-header, add-ordinals, Copilot's drop-invalid-entries) are
// written once, streaming, as splices of the file they read. The tests ask for them as bytes
// and hold each answer to the whole-file implementation they replaced (kept below as ref*):
// every call of the apps' tests is also a differential check.

// rebuildHeader is p's rebuild-header of data as bytes (nil for none), checked against the
// whole-file reference.
func rebuildHeader(p format.HeaderRebuilder, path string, data []byte) []byte {
	got := format.SpliceBytes(data, func(r io.ReaderAt, n int64) (*format.Splice, error) { return p.RebuildHeader(path, r, n) })
	var want []byte
	switch p.(type) {
	case codexLog:
		want = refCodexRebuildHeader(path, data)
	case piLog:
		want = refPiRebuildHeader(path, data)
	case copilotLog:
		want = refCopilotRebuildHeader(path, data)
	case geminiLog:
		want = refGeminiRebuildHeader(path, data)
	default:
		panic(fmt.Sprintf("no reference for %T", p))
	}
	if !bytes.Equal(got, want) || (got == nil) != (want == nil) {
		panic(fmt.Sprintf("%T rebuild-header of %s differs from the whole-file one:\n%.300q\nwant\n%.300q\nof\n%.300q", p, path, got, want, data))
	}
	return got
}

// addOrdinals is p's add-ordinals of data as bytes, checked as rebuildHeader is.
func addOrdinals(p codexLog, path string, data []byte) []byte {
	got := format.SpliceBytes(data, func(r io.ReaderAt, n int64) (*format.Splice, error) { return p.AddOrdinals(path, r, n) })
	if want := refCodexAddOrdinals(path, data); !bytes.Equal(got, want) || (got == nil) != (want == nil) {
		panic(fmt.Sprintf("add-ordinals differs from the whole-file one:\n%.300q\nwant\n%.300q\nof\n%.300q", got, want, data))
	}
	return got
}

// copilotDrop is Copilot's drop-invalid-entries of data, checked as rebuildHeader is.
func copilotDrop(data []byte) []byte {
	got := copilotLog{}.DropInvalid(data)
	if want := refCopilotDropInvalid(data); !bytes.Equal(got, want) || (got == nil) != (want == nil) {
		panic(fmt.Sprintf("drop-invalid-entries differs from the whole-file one:\n%.300q\nwant\n%.300q\nof\n%.300q", got, want, data))
	}
	return got
}

// The rewrites of random damage to every app's sample files, in place (their trees give the
// values a header is rebuilt from), and to a Copilot session: the same bytes as the
// whole-file implementations, read streaming through a reader that returns a few bytes at a
// time at most (a line cut anywhere between reads).
func TestLineRewritesMatchWholeFile(t *testing.T) {
	type input struct {
		path string
		data []byte
		p    format.Profile
	}
	var ins []input
	for dir, p := range map[string]format.Profile{cxSamples: codexLog{}, gemSamples: geminiLog{}, piSamples: piLog{}} {
		filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() && strings.HasSuffix(path, ".jsonl") {
				if b, err := os.ReadFile(path); err == nil {
					ins = append(ins, input{path, b, p})
				}
			}
			return nil
		})
	}
	s := copilotStart("e1")
	u := copilotEv("user.message", `"content":"hello one"`, "e2", "e1")
	a := copilotEv("assistant.message", `"messageId":"m2","content":"ack"`, "e3", "e2")
	cp := s + u + a + u + a
	ins = append(ins, input{copilotDir(t, s[:180]+"\n"+u+a, copilotWSYAML), []byte(cp), copilotLog{}})
	slices.SortFunc(ins, func(a, b input) int { return strings.Compare(a.path, b.path) })
	if len(ins) < 20 {
		t.Fatalf("only %d sample files found", len(ins))
	}
	rng := rand.New(rand.NewPCG(7, 11))
	n, rebuilt, numbered, dropped := 0, 0, 0, 0
	for _, in := range ins {
		for range 60 {
			data := mutateLines(rng, in.data)
			n++
			switch in.p.(type) {
			case codexLog:
				if addOrdinals(codexLog{}, in.path, data) != nil {
					numbered++
				}
			case copilotLog:
				if copilotDrop(data) != nil {
					dropped++
				}
			}
			if rebuildHeader(in.p.(format.HeaderRebuilder), in.path, data) != nil {
				rebuilt++
			}
			// Lines longer than a window given as their records' skeletons, never held: the
			// same bytes.
			restore := format.SetLineWindow([]int{1, 24, 300}[rng.IntN(3)])
			if _, ok := in.p.(codexLog); ok {
				addOrdinals(codexLog{}, in.path, data)
			}
			if _, ok := in.p.(copilotLog); ok {
				copilotDrop(data)
			}
			rebuildHeader(in.p.(format.HeaderRebuilder), in.path, data)
			restore()
			// Read a few bytes at a time: the same splice.
			h := in.p.(format.HeaderRebuilder)
			whole, _ := h.RebuildHeader(in.path, bytes.NewReader(data), int64(len(data)))
			bits, _ := h.RebuildHeader(in.path, trickle{bytes.NewReader(data), 1 + rng.IntN(7)}, int64(len(data)))
			if (whole == nil) != (bits == nil) {
				t.Fatalf("%s: a trickled read gives another answer", in.path)
			}
			if whole != nil {
				x, _ := whole.Bytes(bytes.NewReader(data))
				y, _ := bits.Bytes(bytes.NewReader(data))
				if !bytes.Equal(x, y) {
					t.Fatalf("%s: a trickled read gives other bytes", in.path)
				}
			}
		}
	}
	// A torn header whose cwd comes from a turn_context spelled with escapes, whose torn
	// payload lost its own cwd: read as the whole-file implementation reads it.
	torn := cxSample(t, "torn_session_meta")
	if i := bytes.Index(torn, []byte(`"cwd"`)); i < 0 || i > bytes.IndexByte(torn, '\n') {
		t.Fatal("the torn_session_meta sample's torn line names no cwd")
	} else {
		torn = append(append(bytes.Clone(torn[:i]), '\n'), torn[bytes.IndexByte(torn, '\n')+1:]...)
	}
	escaped := bytes.ReplaceAll(torn, []byte(`"turn_context"`), []byte(`"turn\u005fcontext"`))
	if rebuildHeader(codexLog{}, cxSamples+"torn_session_meta/"+cxRel, escaped) == nil {
		t.Error("no header rebuilt from an escaped turn_context")
	}
	t.Logf("%d inputs: %d headers rebuilt, %d numbered, %d dropped", n, rebuilt, numbered, dropped)
	if rebuilt < n/20 || numbered == 0 || dropped == 0 {
		t.Errorf("the damage made too few rewrites to compare")
	}
}

// trickle reads at most n bytes per call.
type trickle struct {
	r io.ReaderAt
	n int
}

func (t trickle) ReadAt(b []byte, off int64) (int, error) {
	if len(b) > t.n {
		b = b[:t.n]
	}
	return t.r.ReadAt(b, off)
}

var ordinalRe = regexp.MustCompile(`,"ordinal":\d+`)

// mutateLines damages data's lines at random: line 1 torn or dropped, a line dropped, torn,
// doubled, blanked or given a CR, ordinals taken from the last records, types renamed, the
// file cut short, an ordinal's key escaped or its value no number, a turn_context's type
// escaped.
func mutateLines(rng *rand.Rand, data []byte) []byte {
	lines := strings.SplitAfter(string(data), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for range 1 + rng.IntN(3) {
		if len(lines) == 0 {
			break
		}
		i := rng.IntN(len(lines))
		switch rng.IntN(14) {
		case 0:
			l := lines[0]
			lines[0] = l[:rng.IntN(len(l))] + "\n"
		case 1:
			lines = lines[1:]
		case 2:
			lines = append(lines[:i:i], lines[i+1:]...)
		case 3:
			lines[i] = lines[i][:rng.IntN(len(lines[i]))] + "\n"
		case 4:
			lines = append(lines[:i:i], append([]string{lines[i]}, lines[i:]...)...)
		case 5:
			lines = append(lines[:i:i], append([]string{"\n", " \r\n"}, lines[i:]...)...)
		case 6:
			lines[i] = strings.TrimSuffix(lines[i], "\n") + "\r\n"
		case 7:
			for k := max(0, len(lines)-1-rng.IntN(4)); k < len(lines); k++ {
				lines[k] = ordinalRe.ReplaceAllString(lines[k], "")
			}
		case 8:
			lines[i] = strings.Replace(lines[i], `"type":"`, `"type":"x`, 1)
		case 9:
			lines[i] = strings.Replace(lines[i], `"data":`, `"dat":`, 1)
		case 10:
			lines[len(lines)-1] = strings.TrimSuffix(lines[len(lines)-1], "\n")
		case 11: // the key spelled with an escape
			lines[i] = strings.Replace(lines[i], `"ordinal":`, `"ord\u0069nal":`, 1)
		case 12: // an ordinal that is no number
			lines[i] = ordinalRe.ReplaceAllString(lines[i], `,"ordinal":"x"`)
		case 13: // a turn_context's type spelled with an escape
			lines[i] = strings.Replace(lines[i], `"turn_context"`, `"turn\u005fcontext"`, 1)
		}
	}
	return []byte(strings.Join(lines, ""))
}

// The whole-file implementations the streaming ones replaced.

type refHeaderSpot struct {
	lines []format.Line
	fi    int
	from  int
	torn  []byte
}

func refFindHeaderSpot(p format.Profile, path string, data []byte, isHeader func(*jsonv.Value) bool, line1Max int64) (refHeaderSpot, bool) {
	h := refHeaderSpot{lines: format.Split(data, p)}
	for h.fi < len(h.lines) && h.lines[h.fi].Blank {
		h.fi++
	}
	if h.fi == len(h.lines) {
		return h, false
	}
	first := h.lines[h.fi]
	h.from = first.Start
	switch {
	case first.Val == nil && !first.Terminated:
		return h, false // the file is one torn line: nothing to keep after it
	case first.Val == nil:
		// Read up to line1Max bytes (since the rewrites hold no long line), as the file's
		// own first line is below.
		h.torn, h.from = first.Raw[:min(len(first.Raw), int(line1Max))], first.End
	case isHeader(first.Val):
		return h, false
	default: // the salvage dropped line 1 (the file's own, if torn), or there never was one
		if l, _ := fsio.FirstLine(path, line1Max); jsonv.Valid(l, p.Dialect()) != nil {
			h.torn = l
		}
	}
	return h, true
}

func refCodexAddOrdinals(_ string, data []byte) []byte {
	lines := format.Split(data, codexLog{})
	var missing []int // the trailing records without an ordinal, last first
	prev := int64(-1)
	for i := len(lines) - 1; i >= 0 && prev < 0; i-- {
		l := lines[i]
		if l.Val == nil {
			continue
		}
		switch o := l.Val.Get("ordinal"); {
		case o == nil:
			missing = append(missing, i)
		case codexOrdinal(o):
			prev = o.Int
		default:
			return nil
		}
	}
	if prev < 0 || len(missing) == 0 {
		return nil
	}
	out, last := make([]byte, 0, len(data)+16*len(missing)), 0
	for k := len(missing) - 1; k >= 0; k-- {
		l := lines[missing[k]]
		if len(l.Val.Keys) == 0 || l.Val.Keys[0].Key != "timestamp" || !isStr(l.Val.Keys[0].Val) {
			return nil
		}
		prev++
		at := l.Start + l.Val.Keys[0].Val.End
		out = append(append(out, data[last:at]...), `,"ordinal":`+strconv.FormatInt(prev, 10)...)
		last = at
	}
	return append(out, data[last:]...)
}

func refCodexRebuildHeader(path string, data []byte) []byte {
	id := codexThreadID(path)
	if id == "" {
		return nil
	}
	spot, ok := refFindHeaderSpot(codexLog{}, path, data, func(v *jsonv.Value) bool { return strOf(v.Get("type")) == "session_meta" }, codexLine1Max)
	if !ok {
		return nil
	}
	lines, fi, from, torn := spot.lines, spot.fi, spot.from, spot.torn
	var next *format.Line
	var cwd []byte
	for i := fi; i < len(lines); i++ {
		l := &lines[i]
		if l.Val == nil || l.Start < from {
			continue
		}
		if next == nil {
			next = l
		}
		if c := l.Val.Get("payload").Get("cwd"); cwd == nil && strOf(l.Val.Get("type")) == "turn_context" && isStr(c) {
			cwd = c.Raw(l.Raw)
		}
	}
	members := codexPrefixMembers(torn)
	if cwd == nil {
		cwd = members["cwd"]
	}
	if next == nil || cwd == nil || !isStr(next.Val.Get("timestamp")) {
		return nil
	}
	ts := next.Val.Get("timestamp").Raw(next.Raw)
	o := next.Val.Get("ordinal")
	paginated := o != nil
	if paginated && !(codexOrdinal(o) && o.Int == 1) {
		return nil // a fork's header (history_base) or a lost record: not rebuilt
	}
	quoted := []byte(strconv.Quote(id))
	if members["session_id"] == nil {
		members["session_id"] = quoted
	}
	if members["timestamp"] == nil {
		members["timestamp"] = ts
	}
	members["id"], members["cwd"] = quoted, cwd
	h := append([]byte(`{"timestamp":`), ts...)
	if paginated {
		h = append(h, `,"ordinal":0`...)
	}
	h = append(h, `,"type":"session_meta","payload":{`...)
	for _, k := range []string{"session_id", "id", "timestamp", "cwd", "originator", "cli_version", "source", "model_provider"} {
		if m := members[k]; m != nil {
			h = append(append(h, `"`+k+`":`...), m...)
			h = append(h, ',')
		}
	}
	h = h[:len(h)-1]
	if paginated {
		h = append(h, `,"history_mode":"paginated"`...)
	}
	out := append(append([]byte{}, data[:lines[fi].Start]...), h...)
	return append(append(out, "}}\n"...), data[from:]...)
}

func refPiRebuildHeader(path string, data []byte) []byte {
	m := piFileRe.FindStringSubmatch(filepath.Base(path))
	if m == nil {
		return nil
	}
	id := m[5]
	h, ok := refFindHeaderSpot(piLog{}, path, data, func(v *jsonv.Value) bool { return strOf(v.Get("type")) == "session" }, piLine1Max)
	if !ok {
		return nil
	}
	lines, fi, from, torn := h.lines, h.fi, h.from, h.torn
	entries := 0
	for _, l := range lines[fi:] {
		if l.Val != nil && l.Start >= from {
			entries++
		}
	}
	if entries == 0 {
		return nil
	}
	members := piTornMembers(torn)
	if tid := members["id"]; tid != nil && string(tid) != `"`+id+`"` {
		return nil // the torn header is another session's
	}
	cwd := members["cwd"]
	if string(members["type"]) != `"session"` || cwd == nil {
		cwd = piCwdFromDir(path)
	}
	if cwd == nil {
		return nil
	}
	ts := m[1] + ":" + m[2] + ":" + m[3] + "." + m[4]
	head := append([]byte(`{"type":"session","version":3,"id":"`+id+`","timestamp":"`+ts+`","cwd":`), cwd...)
	out := append(append([]byte{}, data[:lines[fi].Start]...), head...)
	return append(append(out, "}\n"...), data[from:]...)
}

func refCopilotRebuildHeader(path string, data []byte) []byte {
	id := copilotSession(path)
	if id == "" {
		return nil
	}
	h, ok := refFindHeaderSpot(copilotLog{}, path, data, func(v *jsonv.Value) bool { return strOf(v.Get("type")) == "session.start" }, copilotLine1Max)
	if !ok {
		return nil
	}
	lines, fi, from, torn := h.lines, h.fi, h.from, h.torn
	var parent *jsonv.Value
	for _, l := range lines[fi:] {
		if l.Val != nil && l.Start >= from {
			parent = l.Val.Get("parentId")
			break
		}
	}
	if !isStr(parent) {
		return nil
	}
	if m := copilotTornString(torn, "sessionId"); m != nil && *m != id {
		return nil
	}
	version := copilotTornString(torn, "copilotVersion")
	if version == nil {
		return nil
	}
	ws := copilotWorkspace(filepath.Join(filepath.Dir(path), "workspace.yaml"))
	if ws == nil || ws.ID != id || ws.CreatedAt == "" {
		return nil
	}
	var ctx bytes.Buffer
	for _, m := range [][2]string{{"cwd", ws.Cwd}, {"gitRoot", ws.GitRoot}, {"branch", ws.Branch}} {
		if m[1] == "" {
			continue
		}
		if ctx.Len() > 0 {
			ctx.WriteByte(',')
		}
		ctx.WriteString(jsonQuote(m[0]) + ":" + jsonQuote(m[1]))
	}
	head := `{"type":"session.start","data":{"sessionId":` + jsonQuote(id) + `,"version":1,"producer":"copilot-agent","copilotVersion":` +
		jsonQuote(*version) + `,"startTime":` + jsonQuote(ws.CreatedAt)
	if ctx.Len() > 0 {
		head += `,"context":{` + ctx.String() + `}`
	}
	head += `},"id":` + jsonQuote(parent.Str) + `,"timestamp":` + jsonQuote(ws.CreatedAt) + `,"parentId":null}` + "\n"
	out := append(append([]byte{}, data[:lines[fi].Start]...), head...)
	return append(out, data[from:]...)
}

func refCopilotDropInvalid(data []byte) []byte {
	var out []byte
	dropped := false
	for i, l := range format.Split(data, copilotLog{}) {
		if l.Blank {
			out = append(out, data[l.Start:l.End]...)
			continue
		}
		if l.Val == nil {
			return nil
		}
		if i > 0 && copilotEventProblem(l.Val, false) != "" {
			dropped = true
			continue
		}
		out = append(out, data[l.Start:l.End]...)
	}
	if !dropped {
		return nil
	}
	return out
}

func refGeminiRebuildHeader(path string, data []byte) []byte {
	m := geminiMainRe.FindStringSubmatch(filepath.Base(path))
	chats, sub, ok := geminiChats(path)
	if m == nil || !ok || sub {
		return nil
	}
	lines := format.Split(data, geminiLog{})
	first := slices.IndexFunc(lines, func(l format.Line) bool { return !l.Blank })
	if first < 0 || (lines[first].Val != nil && geminiMetaProblem(lines[first].Val) == "") {
		return nil // nothing to rebuild from, or line 1 is there
	}
	ids := map[string][]byte{}
	var earliest time.Time
	var ts []byte
	see := func(line []byte, v *jsonv.Value) {
		if t, err := time.Parse(time.RFC3339Nano, strOf(v)); err == nil && (ts == nil || t.Before(earliest)) {
			earliest, ts = t, v.Raw(line)
		}
	}
	for _, l := range lines {
		if l.Val == nil {
			continue
		}
		body := bytes.TrimSuffix(l.Raw, []byte("\r"))
		set := l.Val.Get("$set")
		if id := set.Get("sessionId"); isStr(id) && geminiID8(id.Str) == m[1] {
			ids[id.Str] = id.Raw(body)
		}
		see(body, l.Val.Get("timestamp"))
		for _, it := range arrOf(set.Get("messages")) {
			see(body, it.Get("timestamp"))
		}
	}
	if ents, err := resolve.ReadDir(chats); err == nil {
		for _, e := range ents {
			if n := e.Name(); e.IsDir() && geminiDirRe.MatchString(n) && geminiID8(n) == m[1] {
				ids[n] = []byte(`"` + n + `"`)
			}
		}
	}
	hash, ok := geminiProjectHash(filepath.Dir(chats))
	if len(ids) != 1 || !ok || ts == nil {
		return nil
	}
	var h []byte
	for _, raw := range ids {
		h = append(append([]byte(`{"sessionId":`), raw...), `,"projectHash":"`+hash+`","startTime":`...)
	}
	h = append(append(append(append(h, ts...), `,"lastUpdated":`...), ts...), `,"kind":"main"}`+"\n"...)
	at, end := lines[first].Start, lines[first].Start
	if v := lines[first].Val; v == nil || geminiRecordProblem(v) != "" {
		end = lines[first].End // a torn line 1 is replaced, a record's line kept after it
	}
	return append(append(append([]byte{}, data[:at]...), h...), data[end:]...)
}

// FuzzLineRewrites: each app's line rewrites of any bytes, read streaming, are the
// whole-file implementations' (rebuildHeader, addOrdinals and copilotDrop compare them), in
// each app's sample tree.
func FuzzLineRewrites(f *testing.F) {
	paths := []string{cxSamples + "torn_session_meta/" + cxRel, gemSamples + "torn_metadata" + gemChat,
		piSamples + "torn_header/home/.pi/agent/sessions/--tmp-demo-proj--/" + piTestName}
	for i, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(uint8(i), b)
			f.Add(uint8(i), b[:len(b)/3])
		}
	}
	f.Add(uint8(3), []byte(copilotStart("e1")[:90]+"\n"+copilotEv("user.message", `"content":"x"`, "e2", "e1")))
	f.Fuzz(func(t *testing.T, app uint8, data []byte) {
		switch app % 4 {
		case 0:
			rebuildHeader(codexLog{}, paths[0], data)
			addOrdinals(codexLog{}, paths[0], data)
		case 1:
			rebuildHeader(geminiLog{}, paths[1], data)
		case 2:
			rebuildHeader(piLog{}, paths[2], data)
		case 3:
			copilotDrop(data)
			rebuildHeader(copilotLog{}, "/nonexistent/.copilot/session-state/"+copilotTestID+"/events.jsonl", data)
		}
	})
}

// bigStrings gives some of data's record lines a string over format.SkeletonString: a
// member added first or last, or a string member's value (a cwd, a timestamp, an id)
// lengthened. Taken with a window under their length, such lines are long and their
// skeletons cut those strings.
func bigStrings(rng *rand.Rand, data []byte) []byte {
	big := strings.Repeat("é/x", format.SkeletonString/4+rng.IntN(1000))
	lines := strings.SplitAfter(string(data), "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "{") || rng.IntN(3) == 0 {
			continue
		}
		switch rng.IntN(3) {
		case 0:
			lines[i] = `{"zz":"` + big + `",` + l[1:]
		case 1:
			if j := strings.LastIndexByte(l, '}'); j > 0 {
				lines[i] = l[:j] + `,"zz":"` + big + `"` + l[j:]
			}
		case 2:
			for _, k := range []string{`"cwd":"`, `"timestamp":"`, `"sessionId":"`, `"parentId":"`, `"id":"`} {
				if j := strings.Index(l, k); j >= 0 && rng.IntN(2) == 0 {
					lines[i] = l[:j+len(k)] + big + l[j+len(k):]
					break
				}
			}
		}
	}
	return []byte(strings.Join(lines, ""))
}

// The line rewrites of files whose records hold strings over the skeleton's length, read with
// a window those lines pass: the whole-file implementations' bytes, each value the rewrite
// copies (a cwd, a timestamp, an id) read from the file where the skeleton cut it.
func TestLineRewritesLongRecords(t *testing.T) {
	defer format.SetLineWindow(256 << 10)()
	inputs := []struct {
		path string
		p    format.Profile
	}{
		{cxSamples + "torn_session_meta/" + cxRel, codexLog{}},
		{cxSamples + "last_record_missing_ordinal/" + cxRel, codexLog{}},
		{gemSamples + "torn_metadata" + gemChat, geminiLog{}},
		{piSamples + "torn_header/home/.pi/agent/sessions/--tmp-demo-proj--/" + piTestName, piLog{}},
	}
	rng := rand.New(rand.NewPCG(3, 17))
	rebuilt, numbered := 0, 0
	for _, in := range inputs {
		orig, err := os.ReadFile(in.path)
		if err != nil {
			t.Fatal(err)
		}
		for range 5 {
			data := bigStrings(rng, orig)
			if rng.IntN(2) == 0 {
				data = mutateLines(rng, data)
			}
			if _, ok := in.p.(codexLog); ok && addOrdinals(codexLog{}, in.path, data) != nil {
				numbered++
			}
			if rebuildHeader(in.p.(format.HeaderRebuilder), in.path, data) != nil {
				rebuilt++
			}
		}
	}
	s := copilotStart("e1")
	u := copilotEv("user.message", `"content":"hello one"`, "e2", "e1")
	a := copilotEv("assistant.message", `"messageId":"m2","content":"ack"`, "e3", "e2")
	dir := copilotDir(t, s[:180]+"\n"+u+a, copilotWSYAML)
	for range 5 {
		data := bigStrings(rng, []byte(s+u+a+u+a))
		copilotDrop(data)
		after := bigStrings(rng, []byte(u+a))
		if rng.IntN(2) == 0 {
			after = bytes.Replace([]byte(u+a), []byte(`"parentId":"`), []byte(`"parentId":"`+strings.Repeat("p", format.SkeletonString+9)), 1)
		}
		if rebuildHeader(copilotLog{}, dir, append([]byte(s[:180]+"\n"), after...)) != nil {
			rebuilt++
		}
	}
	t.Logf("%d headers rebuilt, %d numbered", rebuilt, numbered)
	if rebuilt < 10 || numbered < 3 {
		t.Errorf("too few rewrites to compare")
	}
}
