package apps

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
	"github.com/sessionmedic/sessionmedic/internal/resolve"
)

// praisonChildrenRef is the cross-file read as the app makes it, as it was before
// praisonIndex: every sibling read and parsed whole for each file checked, its keys decoded.
// The index must answer as it does.
func praisonChildrenRef(path, sid string) []string {
	dir := filepath.Dir(path)
	ents, err := resolve.ReadDir(dir)
	if err != nil {
		return nil
	}
	var kids []string
	for _, e := range ents {
		name := e.Name()
		if !e.Type().IsRegular() || !praisonSessionRe.MatchString(name) || filepath.Join(dir, name) == path {
			continue
		}
		data, _, err := fsio.ReadStable(filepath.Join(dir, name), 16<<20)
		if err != nil {
			continue
		}
		v, err := jsonv.Parse(data, praisonDialect)
		if err != nil || !isObj(v) {
			continue
		}
		if p := v.Get("parent_id"); isStr(p) && p.Str == sid {
			if id := v.Get("session_id"); isStr(id) {
				kids = append(kids, id.Str)
			}
		}
	}
	sort.Strings(kids)
	return kids
}

// testRacy is the racy window of the tests' index: a test's files live on a file system of
// fine timestamps (tmpfs, ext4, xfs, btrfs), whose ctime is the kernel clock of a tick of at
// most 10 ms. A version is kept once older than that (age), so a test runs in milliseconds
// with the index's guarantee as it is: a write after a kept version is stamped later.
const testRacy = 20 * time.Millisecond

func testIndex() *praisonIndex {
	ix := newPraisonIndex()
	ix.racy = testRacy
	return ix
}

// age waits past the test index's racy window: every version written so far is then kept
// when read.
func age() { time.Sleep(testRacy + 5*time.Millisecond) }

// praisonDoc is a session as the app writes it, with the parent named (or no parent_id when
// parent is "").
func praisonDoc(id, parent string, children ...string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "{\n  \"session_id\": %s,\n  \"messages\": []", pyString(id))
	if parent != "" {
		fmt.Fprintf(&b, ",\n  \"parent_id\": %s", pyString(parent))
	}
	if children != nil || parent != "" {
		var q []string
		for _, c := range children {
			q = append(q, pyString(c))
		}
		fmt.Fprintf(&b, ",\n  \"children_ids\": [%s]", strings.Join(q, ", "))
	}
	b.WriteString("\n}")
	return []byte(b.String())
}

func ctimeOf(t *testing.T, path string) time.Time {
	t.Helper()
	id, err := fsio.StatIdentity(path)
	if err != nil {
		t.Fatal(err)
	}
	return id.Ctime
}

// rewriteInPlace writes data over path's own inode (no rename) and gives it back the mtime it
// had, so only its ctime can tell the versions apart, and returns whether it does. It always
// does for a version older than the racy window (every version the index keeps).
func rewriteInPlace(t *testing.T, path string, data []byte) bool {
	t.Helper()
	old, err := fsio.StatIdentity(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chtimes(path, old.Mtime, old.Mtime); err != nil {
		t.Fatal(err)
	}
	return !ctimeOf(t, path).Equal(old.Ctime)
}

// verdictOf judges the session at path with the profile p.
func verdictOf(t *testing.T, p praison, path string) format.Verdict {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return format.Inspect(p, format.File{Path: path}, data)
}

// The index sees a sibling rewritten in place (same size, same mtime), added, removed, and
// replaced by a rename, as the uncached read does, verdict and all.
func TestPraisonIndexSeesEveryChange(t *testing.T) {
	dir := t.TempDir()
	at := func(n string) string { return filepath.Join(dir, n+".json") }
	write := func(n string, b []byte) {
		if err := os.WriteFile(at(n), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("pp", praisonDoc("pp", "", "aa"))
	write("aa", praisonDoc("aa", "pp"))
	write("bb", praisonDoc("bb", "qq"))
	ix := testIndex()
	cached, plain := praison{ix: ix}, praison{}
	step := func(what string, want []string, wantDetail string) {
		t.Helper()
		age()
		got, ref := ix.children(at("pp"), "pp"), praisonChildrenRef(at("pp"), "pp")
		if !reflect.DeepEqual(got, ref) || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: children %q, uncached %q, want %q", what, got, ref, want)
		}
		v, u := verdictOf(t, cached, at("pp")), verdictOf(t, plain, at("pp"))
		if !reflect.DeepEqual(v, u) || v.Detail != wantDetail {
			t.Fatalf("%s: verdict %+v, uncached %+v, want detail %q", what, v, u, wantDetail)
		}
	}
	step("start", []string{"aa"}, "")
	if ix.n != 2 {
		t.Fatalf("start: %d entries kept, want 2 (aa, bb)", ix.n)
	}

	// In place, same size, mtime put back: bb now names pp.
	before, _ := fsio.StatIdentity(at("bb"))
	if !rewriteInPlace(t, at("bb"), praisonDoc("bb", "pp")) {
		t.Fatal("a rewrite of a version older than the racy window has its ctime")
	}
	after, _ := fsio.StatIdentity(at("bb"))
	if after.Ino != before.Ino || after.Size != before.Size || !after.Mtime.Equal(before.Mtime) {
		t.Fatalf("not a rewrite in place of the same size and mtime: %+v, then %+v", before, after)
	}
	step("bb rewritten in place", []string{"aa", "bb"}, "children_ids lacks bb")

	// Added: cc names pp.
	write("cc", praisonDoc("cc", "pp"))
	step("cc added", []string{"aa", "bb", "cc"}, "children_ids lacks bb, cc")

	// Removed.
	if err := os.Remove(at("cc")); err != nil {
		t.Fatal(err)
	}
	step("cc removed", []string{"aa", "bb"}, "children_ids lacks bb")

	// Replaced by a rename, as PraisonAI writes, with the same size and mtime: aa leaves pp.
	old, _ := fsio.StatIdentity(at("aa"))
	tmp := filepath.Join(dir, "tmpabcdefgh.tmp")
	if err := os.WriteFile(tmp, praisonDoc("aa", "qq"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(tmp, old.Mtime, old.Mtime); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, at("aa")); err != nil {
		t.Fatal(err)
	}
	step("aa replaced by rename", []string{"bb"}, "children_ids lacks bb")

	// What is kept is what is used: an entry changed behind the index's back shows (so the
	// steps above were answered from the cache where the files had not changed).
	ix.mu.Lock()
	e := ix.dirs[dir].sibs["bb.json"]
	e.session = "kept"
	ix.dirs[dir].sibs["bb.json"] = e
	ix.mu.Unlock()
	if got := ix.children(at("pp"), "pp"); !reflect.DeepEqual(got, []string{"kept"}) {
		t.Fatalf("the kept entry was not used: %q", got)
	}
}

// A version changed within the racy window of its read is never kept, so a rewrite in the
// same clock tick (same size, mtime and ctime: the identity cannot tell) is still read.
func TestPraisonIndexRacyNotKept(t *testing.T) {
	dir := t.TempDir()
	pp, aa := filepath.Join(dir, "pp.json"), filepath.Join(dir, "aa.json")
	os.WriteFile(pp, praisonDoc("pp", "", "aa"), 0o600)
	os.WriteFile(aa, praisonDoc("aa", "pp"), 0o600)
	ix := newPraisonIndex()
	if got := ix.children(pp, "pp"); !reflect.DeepEqual(got, []string{"aa"}) {
		t.Fatalf("children %q", got)
	}
	if ix.n != 0 || len(ix.dirs) != 0 {
		t.Fatalf("a version written just now was kept: %d entries", ix.n)
	}
	// Back-dated past the window by the clock, it is kept.
	ix.now = func() time.Time { return time.Now().Add(praisonRacy + time.Second) }
	ix.children(pp, "pp")
	if ix.n != 1 {
		t.Fatalf("a version older than the window was not kept: %d entries", ix.n)
	}
	// A ctime just inside the window is not.
	ctime := ctimeOf(t, aa)
	ix = newPraisonIndex()
	ix.now = func() time.Time { return ctime.Add(praisonRacy - time.Millisecond) }
	ix.children(pp, "pp")
	if ix.n != 0 {
		t.Fatalf("a version %v inside the window was kept", time.Millisecond)
	}
}

// The index keeps no more than praisonIndexMax bytes, and drops the siblings gone.
func TestPraisonIndexBounded(t *testing.T) {
	dir := t.TempDir()
	for i := range 20 {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("s%02d.json", i)), praisonDoc(fmt.Sprintf("s%02d", i), "s00"), 0o600)
	}
	ix := testIndex()
	age()
	ix.children(filepath.Join(dir, "s00.json"), "s00")
	if ix.n != 19 {
		t.Fatalf("%d entries, want 19", ix.n)
	}
	for i := 10; i < 20; i++ {
		os.Remove(filepath.Join(dir, fmt.Sprintf("s%02d.json", i)))
	}
	ix.children(filepath.Join(dir, "s00.json"), "s00")
	if ix.n != 9 || len(ix.dirs[dir].sibs) != 9 {
		t.Fatalf("%d entries (%d in the directory) once 10 siblings are gone, want 9", ix.n, len(ix.dirs[dir].sibs))
	}
	indexAccounted(t, ix)
	// Full: everything is dropped, then this directory's are kept again.
	ix.bytes = praisonIndexMax
	os.WriteFile(filepath.Join(dir, "new.json"), praisonDoc("new", "s00"), 0o600)
	age()
	if got := ix.children(filepath.Join(dir, "s00.json"), "s00"); len(got) != 10 {
		t.Fatalf("children %q", got)
	}
	if ix.n != 1 || len(ix.dirs) != 1 {
		t.Fatalf("full index: %d entries in %d directories after the drop, want 1 in 1", ix.n, len(ix.dirs))
	}
	// Ids longer than praisonIDMax are read every time.
	long := strings.Repeat("x", praisonIDMax+1)
	os.WriteFile(filepath.Join(dir, "long.json"), praisonDoc(long, "s00"), 0o600)
	age()
	n := ix.n
	if got := ix.children(filepath.Join(dir, "s00.json"), "s00"); len(got) != 11 {
		t.Fatalf("children %q", got)
	}
	if _, kept := ix.dirs[dir].sibs["long.json"]; kept || ix.n != n+9 {
		t.Fatalf("a long id was kept (%v), or entries %d, want %d", kept, ix.n, n+9)
	}
	indexAccounted(t, ix)
	// Every sibling gone: the directory's record goes with them.
	for _, n := range []string{"long", "new", "s01", "s02", "s03", "s04", "s05", "s06", "s07", "s08", "s09"} {
		os.Remove(filepath.Join(dir, n+".json"))
	}
	if got := ix.children(filepath.Join(dir, "s00.json"), "s00"); got != nil {
		t.Fatalf("children %q", got)
	}
	if ix.n != 0 || ix.bytes != 0 || len(ix.dirs) != 0 {
		t.Fatalf("%d entries, %d bytes, %d directories kept once every sibling is gone", ix.n, ix.bytes, len(ix.dirs))
	}
}

// indexAccounted: n and bytes are what the index holds.
func indexAccounted(t *testing.T, ix *praisonIndex) {
	t.Helper()
	n, bytes := 0, 0
	for dir, d := range ix.dirs {
		bytes += praisonCost(dir, praisonSibling{})
		for name, s := range d.sibs {
			n++
			bytes += praisonCost(name, s)
		}
	}
	if n != ix.n || bytes != ix.bytes || bytes > praisonIndexMax {
		t.Fatalf("index holds %d entries in %d bytes, accounted %d in %d", n, bytes, ix.n, ix.bytes)
	}
}

// praisonVariants are sibling bodies the read must judge as jsonv.Parse + Get do.
var praisonVariants = []func(id, parent string) []byte{
	func(id, parent string) []byte { return praisonDoc(id, parent) },
	func(id, parent string) []byte { return praisonDoc(id, "") }, // no parent_id
	func(id, parent string) []byte { return []byte(`[` + pyString(parent) + `]`) },
	func(id, parent string) []byte { return praisonDoc(id, parent)[:20] }, // truncated
	func(id, parent string) []byte { return append(praisonDoc(id, parent), " x"...) },
	func(id, parent string) []byte {
		return fmt.Appendf(nil, `{"session_id": %s, "parent_id": null}`, pyString(id))
	},
	func(id, parent string) []byte {
		return fmt.Appendf(nil, `{"session_id": %s, "parent_id": 7, "parent_id": %s}`, pyString(id), pyString(parent))
	},
	func(id, parent string) []byte {
		return fmt.Appendf(nil, `{"session_id": %s, "parent_id": %s, "parent_id": 7}`, pyString(id), pyString(parent))
	},
	func(id, parent string) []byte { // escaped key, and "parent_id" only in a value
		return fmt.Appendf(nil, `{"session_id": %s, "parent\u005fid": %s, "x": "\"parent_id\""}`, pyString(id), pyString(parent))
	},
	func(id, parent string) []byte { // escaped key, spelled out nowhere
		return fmt.Appendf(nil, `{"session_id": %s, "p\u0061rent_id": %s}`, pyString(id), pyString(parent))
	},
	func(id, parent string) []byte { // escaped key with the plain spelling elsewhere
		return fmt.Appendf(nil, `{"session\u005fid": %s, "parent\u005fid": %s, "x": ["parent_id"]}`, pyString(id), pyString(parent))
	},
	func(id, parent string) []byte {
		return fmt.Appendf(nil, `{"parent_id": %s, "session_id": 3}`, pyString(parent))
	},
	func(id, parent string) []byte {
		return fmt.Appendf(nil, `{"parent_id": %s, "session_id": %s, "n": NaN, "m": -Infinity}`, pyString(parent), pyString(id))
	},
	func(id, parent string) []byte {
		return fmt.Appendf(nil, "{\"parent_id\": %s, \"session_id\": %s, \"bad\": \"\xff\"}", pyString(parent), pyString(id))
	},
	func(id, parent string) []byte {
		return fmt.Appendf(nil, `{"parent_id": "%s\u00e9", "session_id": "\ud83d\ude00%s"}`, parent, id)
	},
	func(id, parent string) []byte { return nil },
}

// Differential: over random directories of sessions, random parent links and random edits
// between checks (in place, renamed over, added, removed, made a symlink or a directory),
// the index answers every check as the uncached read does: right after the edits (versions
// in the racy window, read) and once they are older (kept, and then used).
func TestPraisonIndexDifferential(t *testing.T) {
	seeds := 8
	if testing.Short() {
		seeds = 3
	}
	for seed := range seeds {
		praisonDifferential(t, uint64(seed))
	}
}

func praisonDifferential(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	tr := newPraisonTree(t, rng, rng.IntN(12), 4)
	ix := testIndex()
	kept := 0
	for round := range 16 {
		// Checks of every session, in a random order, before the edits are older than the
		// racy window and after.
		for pass := range 2 {
			tr.eachSession(func(p, sid string) {
				got, want := ix.children(p, sid), praisonChildrenRef(p, sid)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("seed %d round %d pass %d: children of %s (%q): %q, uncached %q", seed, round, pass, filepath.Base(p), sid, got, want)
				}
			})
			if pass == 0 {
				age()
			}
		}
		kept = max(kept, ix.n)
		indexAccounted(t, ix)
		for range 1 + rng.IntN(3) {
			tr.edit()
		}
	}
	if kept == 0 {
		t.Fatalf("seed %d: the index kept nothing", seed)
	}
}

// praisonTree is a directory of random sessions (the ids, some without a file), and the
// random bodies and edits the differential tests make of it.
type praisonTree struct {
	t   *testing.T
	rng *rand.Rand
	dir string
	ids []string
}

// newPraisonTree is a tree of the fixed ids and extra more, each written but one in every
// skip.
func newPraisonTree(t *testing.T, rng *rand.Rand, extra, skip int) *praisonTree {
	tr := &praisonTree{t: t, rng: rng, dir: t.TempDir(), ids: []string{"pp", "qq", "a/b", "a_b", "zz", "rr", "s-1", "s-2"}}
	for i := range extra {
		tr.ids = append(tr.ids, fmt.Sprintf("x%d", i))
	}
	for _, id := range tr.ids {
		if rng.IntN(skip) > 0 {
			os.WriteFile(tr.path(id), tr.body(), 0o600)
		}
	}
	return tr
}

func (tr *praisonTree) path(id string) string {
	return filepath.Join(tr.dir, praisonSafeID(id)+".json")
}

// body is a session naming random ids, as the app writes it or as praisonVariants.
func (tr *praisonTree) body() []byte {
	id, parent := tr.ids[tr.rng.IntN(len(tr.ids))], tr.ids[tr.rng.IntN(len(tr.ids))]
	if tr.rng.IntN(3) > 0 {
		return praisonDoc(id, parent)
	}
	return praisonVariants[tr.rng.IntN(len(praisonVariants))](id, parent)
}

// eachSession calls fn for every entry of the directory, in a random order, with its own
// id and with a random one.
func (tr *praisonTree) eachSession(fn func(path, sid string)) {
	ents, _ := os.ReadDir(tr.dir)
	tr.rng.Shuffle(len(ents), func(i, j int) { ents[i], ents[j] = ents[j], ents[i] })
	for _, e := range ents {
		for _, sid := range []string{strings.TrimSuffix(e.Name(), ".json"), tr.ids[tr.rng.IntN(len(tr.ids))]} {
			fn(filepath.Join(tr.dir, e.Name()), sid)
		}
	}
}

// edit makes one random edit: in place, renamed over, added, removed, made a symlink or a
// directory, grown or shrunk.
func (tr *praisonTree) edit() {
	rng, t := tr.rng, tr.t
	p := tr.path(tr.ids[rng.IntN(len(tr.ids))])
	switch rng.IntN(7) {
	case 0, 1: // in place
		if isRegular(p) {
			rewriteInPlace(t, p, tr.body())
		}
	case 2: // renamed over
		tmp := filepath.Join(tr.dir, "tmp12345678.tmp")
		os.WriteFile(tmp, tr.body(), 0o600)
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() && rng.IntN(2) == 0 {
			os.Chtimes(tmp, fi.ModTime(), fi.ModTime())
		}
		os.RemoveAll(p)
		os.Rename(tmp, p)
	case 3: // added or rewritten whole
		os.RemoveAll(p)
		os.WriteFile(p, tr.body(), 0o600)
	case 4: // removed
		os.RemoveAll(p)
	case 5: // a symlink to another session, or a directory
		os.RemoveAll(p)
		if rng.IntN(2) == 0 {
			os.Symlink(tr.path(tr.ids[rng.IntN(len(tr.ids))]), p)
		} else {
			os.Mkdir(p, 0o700)
		}
	case 6: // grown or shrunk in place (a new size)
		if isRegular(p) {
			b, _ := os.ReadFile(p)
			if rng.IntN(2) == 0 {
				b = append(b, ' ')
			} else if len(b) > 0 {
				b = b[:len(b)-1]
			}
			rewriteInPlace(t, p, b)
		}
	}
}

func isRegular(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.Mode().IsRegular()
}

// A sibling over the 16 MiB read limit names no parent, in the index as before.
func TestPraisonIndexTooLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 16 MiB")
	}
	dir := t.TempDir()
	pp, big := filepath.Join(dir, "pp.json"), filepath.Join(dir, "big.json")
	os.WriteFile(pp, praisonDoc("pp", "", "aa"), 0o600)
	doc := praisonDoc("big", "pp")
	pad := bytes.Repeat([]byte(" "), praisonSibMax+1-len(doc))
	os.WriteFile(big, append(doc[:len(doc)-1], append(pad, '}')...), 0o600)
	ix := testIndex()
	age()
	for range 2 { // read, then from the index
		if got, ref := ix.children(pp, "pp"), praisonChildrenRef(pp, "pp"); got != nil || ref != nil {
			t.Fatalf("children %q, uncached %q", got, ref)
		}
	}
	// One byte less: read, and it names pp.
	os.Truncate(big, praisonSibMax)
	b, _ := os.ReadFile(big)
	b[len(b)-1] = '}'
	rewriteInPlace(t, big, b)
	age()
	if got, ref := ix.children(pp, "pp"), praisonChildrenRef(pp, "pp"); !reflect.DeepEqual(got, []string{"big"}) || !reflect.DeepEqual(ref, got) {
		t.Fatalf("children %q, uncached %q", got, ref)
	}
}

// Checks from several goroutines share the index (run with -race).
func TestPraisonIndexConcurrent(t *testing.T) {
	dir := t.TempDir()
	var ids []string
	for i := range 30 {
		id := fmt.Sprintf("s%02d", i)
		ids = append(ids, id)
		os.WriteFile(filepath.Join(dir, id+".json"), praisonDoc(id, fmt.Sprintf("s%02d", i%5)), 0o600)
	}
	ix := testIndex()
	age()
	want := map[string][]string{}
	for _, id := range ids {
		want[id] = praisonChildrenRef(filepath.Join(dir, id+".json"), id)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 4*len(ids))
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, id := range ids {
				if got := ix.children(filepath.Join(dir, id+".json"), id); !reflect.DeepEqual(got, want[id]) {
					errs <- fmt.Sprintf("%s: %q, want %q", id, got, want[id])
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if ix.n != len(ids) {
		t.Fatalf("%d entries, want %d", ix.n, len(ids))
	}
}

// BenchmarkPraisonIndexDirectory: the cross-file read of every session of a directory of
// 100, as a scan of it makes them (each sibling kept from the first).
func BenchmarkPraisonIndexDirectory(b *testing.B) {
	dir := b.TempDir()
	var paths []string
	for i := range 100 {
		id := fmt.Sprintf("%08x-1e05-4283-90df-f0a7cc101d65", i)
		paths = append(paths, filepath.Join(dir, id+".json"))
		os.WriteFile(paths[i], praisonDoc(id, fmt.Sprintf("%08x-1e05-4283-90df-f0a7cc101d65", i/10)), 0o600)
	}
	ix := testIndex()
	age()
	for b.Loop() {
		for i, p := range paths {
			ix.children(p, fmt.Sprintf("%08x-1e05-4283-90df-f0a7cc101d65", i))
		}
	}
}

// praisonSessionName says what praisonSessionRe says of every name.
func TestPraisonSessionNameIsTheRegexp(t *testing.T) {
	names := []string{"", ".json", "a.json", "a.json.lock", "a.jsonx", "a.JSON", "a b.json", "a/b.json",
		"-_.json", "a..json", "é.json", "a\n.json", "tmpabcdefgh.tmp", "x.json.corrupt-1234567890123", "\xff.json"}
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := "aZ09_-./é\x00\xff .json"
	for range 20000 {
		b := make([]byte, rng.IntN(8))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		names = append(names, string(b), string(b)+".json")
	}
	for _, n := range names {
		if got, want := praisonSessionName(n), praisonSessionRe.MatchString(n); got != want {
			t.Fatalf("praisonSessionName(%q) = %v, the regexp says %v", n, got, want)
		}
	}
}
