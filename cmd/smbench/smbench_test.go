package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
	"github.com/sessionmedic/sessionmedic/policy"
)

func TestPercentile(t *testing.T) {
	var xs []time.Duration
	for i := 100; i >= 1; i-- {
		xs = append(xs, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{50, 50 * time.Millisecond}, {99, 99 * time.Millisecond}, {100, 100 * time.Millisecond}, {1, time.Millisecond}, {0.001, time.Millisecond}} {
		if got := percentile(xs, c.p); got != c.want {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
	if xs[0] != 100*time.Millisecond {
		t.Error("percentile reordered its input")
	}
	if got := percentile(nil, 99); got != 0 {
		t.Errorf("p99 of nothing = %v", got)
	}
	if got := percentile([]time.Duration{7}, 99); got != 7 {
		t.Errorf("p99 of one = %v", got)
	}
}

func TestMedianRatio(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var out []time.Duration
		for _, x := range v {
			out = append(out, time.Duration(x)*time.Millisecond)
		}
		return out
	}
	if got := medianRatio(ms(10, 20, 90), ms(10, 10, 10)); got != 2 {
		t.Errorf("odd: %v", got)
	}
	if got := medianRatio(ms(10, 20, 40, 90), ms(10, 10, 10, 10)); got != 3 {
		t.Errorf("even: %v", got)
	}
}

func TestWriteTable(t *testing.T) {
	rows := []Row{
		{Workload: "validate", Goal: "strict validation", Sessionmedic: "jsonv 1500 MB/s", Peers: "jsontext 700 MB/s", Ratio: "2.14×", Target: "≥ 2×", Met: metYes, Note: "a\tb"},
		{Workload: "idle", Goal: "idle CPU", Sessionmedic: "0.000 s CPU", Target: "≤ 0.1 s", Met: metNo},
	}
	var buf bytes.Buffer
	if err := writeTable(&buf, rows); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines:\n%s", len(lines), buf.String())
	}
	if !strings.HasPrefix(lines[0], "workload") || !strings.Contains(lines[0], "met") {
		t.Errorf("header: %q", lines[0])
	}
	// Columns are aligned: "met" of the header and each row's verdict start at one offset
	// (in runes: the table holds non-ASCII).
	col := func(line, word string) int {
		i := strings.Index(line, word)
		if i < 0 {
			return -1
		}
		return len([]rune(line[:i]))
	}
	want := col(lines[0], "  met") + 2
	if got := col(lines[1], " yes ") + 1; got != want {
		t.Errorf("row 1: met at %d, header at %d:\n%s", got, want, buf.String())
	}
	if got := col(lines[2], " no ") + 1; got != want {
		t.Errorf("row 2: met at %d, header at %d:\n%s", got, want, buf.String())
	}
	if strings.Contains(lines[1], "\t") || !strings.Contains(lines[1], "a b") {
		t.Errorf("a tab in a cell must not break the table: %q", lines[1])
	}
	if !strings.Contains(lines[2], "—") {
		t.Errorf("empty cells are shown as —: %q", lines[2])
	}
}

func TestWriteJSON(t *testing.T) {
	r := Row{Workload: "append", Met: metYes}
	r.setRatio(1234.6)
	r.metric("x", 1)
	var buf bytes.Buffer
	if err := writeJSON(&buf, Result{Machine: Machine{Cores: 2}, Rows: []Row{r}}); err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Rows) != 1 || back.Rows[0].RatioValue == nil || *back.Rows[0].RatioValue != 1234.6 || back.Rows[0].Ratio != "1235×" {
		t.Errorf("round trip: %+v", back.Rows)
	}
}

func TestFormatting(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{fmtDur(1500 * time.Microsecond), "1.5 ms"},
		{fmtDur(42 * time.Microsecond), "42 µs"},
		{fmtDur(2500 * time.Millisecond), "2.5 s"},
		{fmtDur(250 * time.Second), "250 s"},
		{fmtBytes(64 << 20), "64.0 MiB"},
		{fmtBytes(1 << 30), "1.00 GiB"},
		{fmtRate(1.5e9), "1500 MB/s"},
		{fmtRatio(4.956), "4.96×"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// valid3 checks a document with all three validators.
func valid3(t *testing.T, what string, b []byte) {
	t.Helper()
	if err := jsonv.Valid(b, jsonv.Dialect{}); err != nil {
		t.Fatalf("%s: jsonv: %v", what, err)
	}
	if !json.Valid(b) {
		t.Fatalf("%s: encoding/json rejects it", what)
	}
	if !jsontext.Value(b).IsValid(jsontextOpts...) {
		t.Fatalf("%s: jsontext rejects it", what)
	}
}

// testSize is the generators' requested size in the tests (the benchmark asks for 8 MiB and
// checks what it gets with every validator before timing).
const testSize = 1 << 20

func TestGenJSONDoc(t *testing.T) {
	doc := genJSONDoc(testSize, 1)
	if len(doc) < testSize || len(doc) > testSize+64<<10 {
		t.Fatalf("size %d, want about %d", len(doc), testSize)
	}
	valid3(t, "doc", doc)
	if err := jsontextDoc(doc); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`\n`, `\"`, `\\`, `\u003c`, "😀", "日本語", `"cost_usd": 0.`, `"stop": null`} {
		if !bytes.Contains(doc, []byte(want)) {
			t.Errorf("the document has no %q", want)
		}
	}
	if !bytes.Equal(doc, genJSONDoc(testSize, 1)) {
		t.Error("not deterministic")
	}
}

func TestGenJSONL(t *testing.T) {
	data := genJSONL(testSize, 2)
	if len(data) < testSize || len(data) > testSize+64<<10 {
		t.Fatalf("size %d, want about %d", len(data), testSize)
	}
	for _, v := range []func([]byte) error{jsonvLines, encodingJSONLines, jsontextLines} {
		if err := v(data); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Contains(data, []byte(`\ud83d\ude`)) {
		t.Error("no Python-style escaped surrogate pairs")
	}
	if err := jsonvLines(append(data, `{"torn":`...)); err == nil {
		t.Error("a torn last line must fail")
	}
}

func TestEscapeNonASCII(t *testing.T) {
	in := mustMarshal(map[string]string{"s": "café 😀 日本 \"q\" \n"})
	out := escapeNonASCII(in)
	for _, c := range out {
		if c >= 0x80 {
			t.Fatalf("non-ASCII left: %s", out)
		}
	}
	var a, b map[string]string
	if json.Unmarshal(in, &a) != nil || json.Unmarshal(out, &b) != nil || a["s"] != b["s"] {
		t.Fatalf("value changed: %s -> %s", in, out)
	}
}

func TestExactLineAndChunk(t *testing.T) {
	g := newGen(9)
	for _, n := range []int{128, 1024, 4000} {
		l := g.exactLine(n)
		if len(l) != n || l[n-1] != '\n' {
			t.Fatalf("exactLine(%d): %d bytes", n, len(l))
		}
		valid3(t, "line", l[:n-1])
	}
	chunk := genChunk(1<<20, 7)
	if len(chunk) != 1<<20 {
		t.Fatalf("chunk is %d bytes", len(chunk))
	}
	if err := jsonvLines(chunk); err != nil {
		t.Fatal(err)
	}
	// A file of repeated chunks is valid JSONL too.
	if err := jsonvLines(append(append([]byte(nil), chunk...), chunk...)); err != nil {
		t.Fatal(err)
	}
}

func TestGenTree(t *testing.T) {
	root := t.TempDir()
	spec := treeSpec{Top: 3, Leaves: 4, Files: 10}
	st, err := genTree(root, spec, 5)
	if err != nil {
		t.Fatal(err)
	}
	if st.Files != 120 || st.JSON != 60 || st.JSONL != 60 || st.Dirs != 1+3+12 {
		t.Fatalf("stats %+v", st)
	}
	var files, dirs int
	var total int64
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			dirs++
			return nil
		}
		files++
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		total += int64(len(data))
		if len(data) < 100 || len(data) > 16<<10 {
			t.Errorf("%s: %d bytes", p, len(data))
		}
		switch filepath.Ext(p) {
		case ".json":
			valid3(t, p, data)
		case ".jsonl":
			if err := jsonvLines(data); err != nil {
				t.Errorf("%s: %v", p, err)
			}
			if err := encodingJSONLines(data); err != nil {
				t.Errorf("%s: %v", p, err)
			}
		default:
			t.Errorf("unexpected file %s", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files != st.Files || dirs != st.Dirs || total != st.Bytes {
		t.Fatalf("walked %d files, %d dirs, %d bytes; stats %+v", files, dirs, total, st)
	}
	if n, err := warmTree(root); err != nil || n != files {
		t.Fatalf("warmTree: %d, %v", n, err)
	}
}

func TestLatFile(t *testing.T) {
	dir := t.TempDir()
	g := newGen(3)
	for _, isJSONL := range []bool{false, true} {
		f := &latFile{jsonl: isJSONL, id: "x", path: filepath.Join(dir, "s.json")}
		if isJSONL {
			f.path += "l"
		}
		if !isJSONL {
			f.content = f.render()
		}
		if err := os.WriteFile(f.path, f.content, 0o644); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 20; i++ {
			if err := f.write(g.sessionLine(i, 10)); err != nil {
				t.Fatal(err)
			}
		}
		data, _ := os.ReadFile(f.path)
		if !bytes.Equal(data, f.content) || !validSession(data, isJSONL) {
			t.Fatalf("jsonl=%v: the file is not what the writer says it wrote", isJSONL)
		}
		if err := f.damage(g.sessionLine(0, 10)); err != nil {
			t.Fatal(err)
		}
		data, _ = os.ReadFile(f.path)
		if validSession(data, isJSONL) || !bytes.HasPrefix(data, f.content) {
			t.Fatalf("jsonl=%v: the damage must invalidate the file and keep its prefix", isJSONL)
		}
	}
}

func TestParseStatCPU(t *testing.T) {
	line := "1234 (sessionmedic run) S 1 1234 1234 0 -1 4194560 1000 0 0 0 250 75 0 0 20 0 9 0 100 1000000 2000 18446744073709551615"
	got, err := parseStatCPU(line)
	if err != nil || got != 3250*time.Millisecond {
		t.Fatalf("got %v, %v", got, err)
	}
	if _, err := parseStatCPU("garbage"); err == nil {
		t.Fatal("garbage parsed")
	}
}

func TestParseFlags(t *testing.T) {
	o, err := parseFlags(nil, io.Discard)
	if err != nil || len(o.only) != len(workloads) || !o.selected("growth") {
		t.Fatalf("%+v %v", o, err)
	}
	if o, err := parseFlags([]string{"-only", "growth"}, io.Discard); err != nil || !o.selected("growth") || len(o.only) != 1 {
		t.Fatalf("-only growth: %+v %v", o, err)
	}
	o, err = parseFlags([]string{"-quick", "-only", "scan, validate", "-json"}, io.Discard)
	if err != nil || !o.quick || !o.json || !o.selected("scan") || !o.selected("validate") || o.selected("idle") {
		t.Fatalf("%+v %v", o, err)
	}
	if _, err := parseFlags([]string{"-only", "nope"}, io.Discard); err == nil {
		t.Fatal("an unknown workload must be an error")
	}
	if _, err := parseFlags([]string{"extra"}, io.Discard); err == nil {
		t.Fatal("a positional argument must be an error")
	}
}

func TestParsePyCount(t *testing.T) {
	if ok, bad, err := parsePyCount("2000 0\n"); err != nil || ok != 2000 || bad != 0 {
		t.Fatalf("%d %d %v", ok, bad, err)
	}
	if _, _, err := parsePyCount("Traceback"); err == nil {
		t.Fatal("garbage parsed")
	}
}

func TestWritePolicy(t *testing.T) {
	p := filepath.Join(t.TempDir(), "policy.yaml")
	if err := writePolicy(p, "/srv/a b", "/srv/state", "100ms"); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(p)
	cfg, err := policy.Parse(p, data)
	if err != nil {
		t.Fatalf("%v:\n%s", err, data)
	}
	if cfg.StateDir != "/srv/state" || len(cfg.Rules) != 2 {
		t.Fatalf("%+v", cfg)
	}
	for i, format := range []string{"json", "jsonl"} {
		r := cfg.Rules[i]
		if r.Format != format || r.Settle != 100*time.Millisecond || len(r.Paths) != 1 || r.Paths[0] != "/srv/a b" {
			t.Errorf("rule %d: %+v", i, r)
		}
	}
	if r, _, ok := cfg.RuleFor("/srv/a b/x/y/s.jsonl"); !ok || r.Format != "jsonl" {
		t.Errorf("a .jsonl file deep in the tree: %+v %v", r, ok)
	}
}
