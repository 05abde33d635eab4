package apps

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/fsio"
)

// judged is the File of path as the engine judges it: the identity of its bytes as read,
// and when the read began (zero Read when it cannot be read).
func judged(t *testing.T, path string) format.File {
	t.Helper()
	began := time.Now()
	_, id, err := fsio.ReadStable(path, praisonSibMax)
	if err != nil {
		return format.File{Path: path}
	}
	return format.File{Path: path, Read: id, ReadBegan: began}
}

// expire drops every snapshot, as praisonReuse passing does.
func expire(ix *praisonIndex) {
	ix.mu.Lock()
	clear(ix.snaps)
	ix.snapBytes = 0
	ix.mu.Unlock()
}

// snapsAccounted: snapBytes is what the snapshots hold.
func snapsAccounted(t *testing.T, ix *praisonIndex) {
	t.Helper()
	ix.mu.Lock()
	defer ix.mu.Unlock()
	n := 0
	for _, sn := range ix.snaps {
		n += sn.cost
	}
	if n != ix.snapBytes || n > ix.snapMax {
		t.Fatalf("snapshots hold %d bytes, accounted %d", n, ix.snapBytes)
	}
}

// Differential: over random directories and random edits between scans (praisonDifferential's),
// a scan whose checks answer from the directory's last listing answers every check as the
// uncached read does, and most of them without a listing.
func TestPraisonSnapshotDifferential(t *testing.T) {
	seeds := 8
	if testing.Short() {
		seeds = 3
	}
	for seed := range seeds {
		praisonSnapDifferential(t, uint64(seed))
	}
}

func praisonSnapDifferential(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 11))
	tr := newPraisonTree(t, rng, 4+rng.IntN(16), 5)
	ix := testIndex()
	checks := 0
	for round := range 12 {
		expire(ix) // the last scan's listing is past praisonReuse
		if rng.IntN(4) > 0 {
			age() // versions older than the racy window: the listing may answer
		}
		tr.eachSession(func(p, sid string) {
			got, want := ix.childrenOf(judged(t, p), sid), praisonChildrenRef(p, sid)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d round %d: children of %s (%q): %q, uncached %q", seed, round, filepath.Base(p), sid, got, want)
			}
			checks++
		})
		snapsAccounted(t, ix)
		indexAccounted(t, ix)
		for range 1 + rng.IntN(4) {
			tr.edit()
		}
	}
	if ix.reused == 0 || ix.reused*2 < checks/3 {
		t.Fatalf("seed %d: %d of %d checks answered from a listing", seed, ix.reused, checks)
	}
}

// A scan of a directory of n sessions lists it once: every check after the first answers
// from its listing, the first one's own link read once.
func TestPraisonSnapshotOneListing(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for i := range 50 {
		id := fmt.Sprintf("s%02d", i)
		paths = append(paths, filepath.Join(dir, id+".json"))
		os.WriteFile(paths[i], praisonDoc(id, fmt.Sprintf("s%02d", i/5)), 0o600)
	}
	ix := testIndex()
	age()
	for i, p := range paths {
		id := fmt.Sprintf("s%02d", i)
		if got, want := ix.childrenOf(judged(t, p), id), praisonChildrenRef(p, id); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: %q, uncached %q", id, got, want)
		}
	}
	if ix.reused != len(paths)-1 {
		t.Fatalf("%d checks answered from the listing, want %d", ix.reused, len(paths)-1)
	}
	if sn := ix.snaps[dir]; sn == nil || len(sn.unknown) != 0 || len(sn.names) != len(paths) {
		t.Fatalf("snapshot %+v: want every session, every link known", sn)
	}
	// s00 names itself as its parent: never its own child, from a listing or not.
	if got := ix.childrenOf(judged(t, paths[0]), "s00"); !reflect.DeepEqual(got, []string{"s01", "s02", "s03", "s04"}) {
		t.Fatalf("children of s00: %q", got)
	}
}

// What keeps a check from answering from the last listing: a version of the session not
// the one listed, or not older than the listing and the read by the racy window; bytes
// that are not the file's own; a listing older than praisonReuse. Each then lists afresh
// and sees a sibling changed since.
func TestPraisonSnapshotRefused(t *testing.T) {
	dir := t.TempDir()
	pp, aa, bb := filepath.Join(dir, "pp.json"), filepath.Join(dir, "aa.json"), filepath.Join(dir, "bb.json")
	os.WriteFile(pp, praisonDoc("pp", "", "aa"), 0o600)
	os.WriteFile(aa, praisonDoc("aa", "pp"), 0o600)
	os.WriteFile(bb, praisonDoc("bb", "qq"), 0o600)
	var clock time.Duration // the index's clock runs this far ahead of the wall clock
	ix := testIndex()
	ix.now = func() time.Time { return time.Now().Add(clock) }
	age()
	list := func() { // a listing seeing bb's parent qq, then bb made pp's child behind it
		t.Helper()
		expire(ix)
		os.WriteFile(bb, praisonDoc("bb", "qq"), 0o600)
		age()
		ix.children(aa, "aa")
		if !rewriteInPlace(t, bb, praisonDoc("bb", "pp")) {
			t.Fatal("an in-place rewrite kept its ctime")
		}
	}
	stale, fresh := []string{"aa"}, []string{"aa", "bb"}
	try := func(what string, f format.File, want []string) {
		t.Helper()
		n := ix.reused
		got := ix.childrenOf(f, "pp")
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: children %q, want %q", what, got, want)
		}
		if reused := ix.reused > n; reused != reflect.DeepEqual(want, stale) {
			t.Fatalf("%s: answered from the listing: %v", what, reused)
		}
	}
	list()
	try("listed version, within praisonReuse", judged(t, pp), stale) // the window this trades
	list()
	try("no Read: a repair's result", format.File{Path: pp}, fresh)
	list()
	f := judged(t, pp)
	f.ReadBegan = f.Read.Ctime.Add(ix.racy / 2)
	try("a read begun within the racy window of the version's ctime", f, fresh)
	list()
	f = judged(t, pp)
	f.Read.Size++
	try("another version than the one listed", f, fresh)
	list()
	clock = praisonReuse + time.Millisecond
	try("a listing older than praisonReuse", judged(t, pp), fresh)
	clock = 0
	// Rewritten in place after the listing: another version, listed afresh.
	list()
	rewriteInPlace(t, pp, praisonDoc("pp", "", "aa"))
	age()
	try("the session rewritten since the listing", judged(t, pp), fresh)
	// Written just before the listing: its ctime is within the racy window of the listing.
	expire(ix)
	os.WriteFile(bb, praisonDoc("bb", "qq"), 0o600)
	os.WriteFile(pp, praisonDoc("pp", "", "aa"), 0o600)
	ix.children(aa, "aa")
	rewriteInPlace(t, bb, praisonDoc("bb", "pp"))
	age()
	try("a version written just before the listing", judged(t, pp), fresh)
	snapsAccounted(t, ix)
}

// Snapshots never hold more than their bound: the expired go first, then all.
func TestPraisonSnapshotBounded(t *testing.T) {
	root := t.TempDir()
	ix := testIndex()
	var clock time.Duration
	ix.now = func() time.Time { return time.Now().Add(clock) }
	dirs := make([]string, 3)
	for i := range dirs {
		dirs[i] = filepath.Join(root, fmt.Sprint(i))
		os.Mkdir(dirs[i], 0o700)
		for j := range 20 {
			os.WriteFile(filepath.Join(dirs[i], fmt.Sprintf("s%02d.json", j)), praisonDoc(fmt.Sprintf("s%02d", j), "s00"), 0o600)
		}
	}
	list := func(i int) { ix.children(filepath.Join(dirs[i], "s00.json"), "s00") }
	has := func(what string, want ...int) {
		t.Helper()
		snapsAccounted(t, ix)
		var got []int
		for i, d := range dirs {
			if ix.snaps[d] != nil {
				got = append(got, i)
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: snapshots of %v, want %v", what, got, want)
		}
	}
	list(0)
	ix.snapMax = 2*ix.snaps[dirs[0]].cost + ix.snaps[dirs[0]].cost/2 // two fit, not three
	list(1)
	has("two", 0, 1)
	clock = praisonReuse + time.Second
	list(2)
	has("the expired dropped for a third", 2)
	list(0)
	has("two fresh", 0, 2)
	list(1)
	has("all dropped when none expired", 1)
	ix.snapMax = ix.snaps[dirs[1]].cost - 1
	list(1)
	has("one larger than the bound is not kept")
}

// BenchmarkPraisonScan: the cross-file checks of every session of a directory of n, as a
// scan makes them (each answered from the first one's listing), against a listing per
// check (children).
func BenchmarkPraisonScan(b *testing.B) {
	for _, n := range []int{100, 2000} {
		dir := b.TempDir()
		var paths, ids []string
		for i := range n {
			id := fmt.Sprintf("%08x-1e05-4283-90df-f0a7cc101d65", i)
			ids, paths = append(ids, id), append(paths, filepath.Join(dir, id+".json"))
			os.WriteFile(paths[i], praisonDoc(id, fmt.Sprintf("%08x-1e05-4283-90df-f0a7cc101d65", i/10)), 0o600)
		}
		age()
		files := make([]format.File, n)
		for i, p := range paths {
			began := time.Now()
			_, id, err := fsio.ReadStable(p, praisonSibMax)
			if err != nil {
				b.Fatal(err)
			}
			files[i] = format.File{Path: p, Read: id, ReadBegan: began}
		}
		b.Run(fmt.Sprintf("listing-shared/%d", n), func(b *testing.B) {
			ix := testIndex()
			for b.Loop() {
				expire(ix)
				for i, f := range files {
					ix.childrenOf(f, ids[i])
				}
			}
		})
		if n <= 100 {
			b.Run(fmt.Sprintf("listing-per-check/%d", n), func(b *testing.B) {
				ix := testIndex()
				for b.Loop() {
					for i, p := range paths {
						ix.children(p, ids[i])
					}
				}
			})
		}
	}
}
