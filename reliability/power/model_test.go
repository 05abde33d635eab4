package power

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// replaceDurably runs the heal protocol's replace on dir/a by hand, announcing each
// operation to hook as the engine's seam does; sync says which barriers it performs.
func replaceDurably(t *testing.T, dir string, hook func(op, path string) error, data []byte, fsync, fsyncDir bool) {
	t.Helper()
	tmp, target := filepath.Join(dir, ".~a.tmp"), filepath.Join(dir, "a")
	hook("create", tmp)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	hook("write", tmp)
	f.Write(data)
	if fsync {
		hook("fsync", tmp)
		f.Sync()
	}
	f.Close()
	hook("rename", target)
	if err := os.Rename(tmp, target); err != nil {
		t.Fatal(err)
	}
	if fsyncDir {
		hook("fsync-dir", dir)
	}
}

func kinds(ops []Op) string {
	var out []string
	for _, o := range ops {
		out = append(out, o.Kind+" "+o.Path)
	}
	return strings.Join(out, ", ")
}

// outcomes is what the file a holds in every state at point k ("-" when absent), and the
// names present besides it.
func outcomes(init Tree, ops []Op, k int) []string {
	seen := map[string]bool{}
	States(ops, k, 1<<20, rand.New(rand.NewPCG(1, 1)), func(s State) bool {
		if s.K != k {
			return false
		}
		tr := Build(init, ops, s)
		out := "-"
		if n, ok := tr.Names["a"]; ok {
			out = string(tr.Data[n.Ino])
		}
		var names []string
		for _, n := range tr.visible() {
			if n != "a" {
				names = append(names, n)
			}
		}
		seen[out+" "+strings.Join(names, ",")] = true
		return true
	})
	var out []string
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestRecordedReplace(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a"), []byte("old"), 0o644)
	r := &Recorder{Root: dir}
	r.Start()
	replaceDurably(t, dir, r.Hook, []byte("new"), true, true)
	init, ops, final := r.Finish()
	if got, want := kinds(ops), "create .~a.tmp, write .~a.tmp, fsync .~a.tmp, rename a, fsync-dir ."; got != want {
		t.Fatalf("ops: %s, want %s", got, want)
	}
	if string(final.Data[final.Names["a"].Ino]) != "new" || string(init.Data[init.Names["a"].Ino]) != "old" {
		t.Fatal("initial or final tree wrong")
	}
	// Before the directory fsync the rename and the temp's name may each be lost.
	if got, want := outcomes(init, ops, 4), []string{"new ", "old ", "old .~a.tmp"}; !slices.Equal(got, want) {
		t.Errorf("after the rename: %q, want %q", got, want)
	}
	if got, want := outcomes(init, ops, 5), []string{"new "}; !slices.Equal(got, want) {
		t.Errorf("after the directory fsync: %q, want %q", got, want)
	}
}

// Without the temp's fsync, the renamed file may be empty, zero-filled or torn.
func TestUnsyncedWriteTears(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a"), []byte("old"), 0o644)
	r := &Recorder{Root: dir}
	r.Start()
	data := bytes.Repeat([]byte("x"), 2*BlockSize+10)
	replaceDurably(t, dir, r.Hook, data, false, true)
	init, ops, _ := r.Finish()
	got := map[string]bool{}
	for _, o := range outcomes(init, ops, len(ops)) {
		got[o] = true
	}
	x := func(n int) string { return strings.Repeat("x", n) }
	z := func(n int) string { return strings.Repeat("\x00", n) }
	for _, want := range []string{" ", x(len(data)) + " ", z(len(data)) + " ", x(BlockSize) + " ",
		x(2*BlockSize) + " ", x(BlockSize) + z(BlockSize+10) + " "} {
		if !got[want] {
			t.Errorf("no state where a holds %d bytes %.8q…", len(want)-1, want)
		}
	}
	if got["old "] {
		t.Error("the rename was fsynced with its directory but a state undoes it")
	}
}

func TestRecorderSeesUnlinkAndLink(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "t"), []byte("data"), 0o600)
	r := &Recorder{Root: dir}
	r.Start()
	r.Hook("link", filepath.Join(dir, "a"))
	os.Link(filepath.Join(dir, "t"), filepath.Join(dir, "a"))
	os.Remove(filepath.Join(dir, "t"))
	r.Hook("fsync-dir", dir)
	_, ops, _ := r.Finish()
	if got, want := kinds(ops), "link a, unlink t, fsync-dir ."; got != want {
		t.Fatalf("ops: %s, want %s", got, want)
	}
}

func TestSampledStatesStayInModel(t *testing.T) {
	o := Op{Kind: "write", Off: 100, Data: make([]byte, 3*BlockSize)}
	if got := cuts(o); !slices.Equal(got, []int64{BlockSize - 100, 2*BlockSize - 100, 3*BlockSize - 100}) {
		t.Fatalf("cuts %v", got)
	}
	r := rand.New(rand.NewPCG(2, 2))
	alts := Alts(o)
	for range 1000 {
		if a := sampleAlt(o, r); !slices.Contains(alts, a) {
			t.Fatalf("sampled %v, not among %v", a, alts)
		}
	}
}

// TestStateDurableBeforeRename: when a heal renames over a session file, everything the next
// start needs from the state directory (the directory itself, the quarantine, the journal)
// is durable. Regression: the state directory was created by the path lock without its
// parent fsynced, so a power cut could take the quarantine and the journal away after the
// rename.
func TestStateDurableBeforeRename(t *testing.T) {
	tg := genTarget(7)
	tg.healthy = nil // a fresh state directory, made by this heal
	dir := filepath.Join(t.TempDir(), "w00")
	os.Mkdir(dir, 0o755)
	rc := record(t, tg, dir)
	renames := 0
	for i, o := range rc.ops {
		if (o.Kind != "rename" && o.Kind != "link") || !strings.HasPrefix(o.Path, "case/") {
			continue
		}
		renames++
		for _, p := range Pending(rc.ops, i) {
			if q := rc.ops[p]; under(q.Path, "state") && !strings.HasPrefix(q.Path, "state/last-good") {
				t.Errorf("at the rename of %s (#%d), %s %s (#%d) is not durable", o.Path, i, q.Kind, q.Path, p)
			}
		}
	}
	if renames == 0 {
		t.Fatal("no rename of a session file recorded")
	}
}

// A lock file published whole (written and fsynced unnamed, then linked in) is absent or
// whole in every state, never empty or torn.
func TestPublishedLinkIsWholeOrAbsent(t *testing.T) {
	dir := t.TempDir()
	r := &Recorder{Root: dir}
	r.Start()
	r.Hook("link", filepath.Join(dir, "a"))
	os.WriteFile(filepath.Join(dir, "a"), []byte("owner:1:T"), 0o644)
	init, ops, _ := r.Finish()
	if got, want := kinds(ops), "write a, fsync a, link a"; got != want {
		t.Fatalf("ops: %s, want %s", got, want)
	}
	for k := 0; k <= len(ops); k++ {
		for _, o := range outcomes(init, ops, k) {
			if o != "- " && o != "owner:1:T " {
				t.Errorf("at point %d a state shows %q", k, o)
			}
		}
	}
}

// The blocks of one write land in any subset; a change of permission bits or owner is lost
// without the inode's fsync.
func TestScatteredBlocksAndLostChmod(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a"), nil, 0o600)
	r := &Recorder{Root: dir}
	r.Start()
	r.Hook("chmod", filepath.Join(dir, "a"))
	os.Chmod(filepath.Join(dir, "a"), 0o644)
	root := os.Geteuid() == 0
	if root {
		r.Hook("chown", filepath.Join(dir, "a"))
		os.Chown(filepath.Join(dir, "a"), 4242, 4242)
	}
	r.Hook("write", filepath.Join(dir, "a"))
	data := append(append(bytes.Repeat([]byte("x"), BlockSize), bytes.Repeat([]byte("y"), BlockSize)...), bytes.Repeat([]byte("z"), 10)...)
	os.WriteFile(filepath.Join(dir, "a"), data, 0o644)
	init, ops, _ := r.Finish()
	want := "chmod a, write a"
	if root {
		want = "chmod a, chown a, write a"
	}
	if got := kinds(ops); got != want {
		t.Fatalf("ops: %s, want %s", got, want)
	}
	middle, modes := false, map[string]bool{}
	States(ops, len(ops), 1<<20, rand.New(rand.NewPCG(1, 1)), func(s State) bool {
		tr := Build(init, ops, s)
		d := tr.Data[tr.Names["a"].Ino]
		if len(d) == 2*BlockSize && d[0] == 0 && d[BlockSize] == 'y' {
			middle = true
		}
		modes[fmt.Sprintf("%o", tr.Mode[tr.Names["a"].Ino])] = true
		modes[fmt.Sprint(tr.Own[tr.Names["a"].Ino].UID)] = true
		return true
	})
	if !middle {
		t.Error("no state where only the write's second block landed")
	}
	if !modes["600"] || !modes["644"] || root && (!modes["0"] || !modes["4242"]) {
		t.Errorf("modes and owners seen %v, want 600 and 644 (and owners 0 and 4242)", modes)
	}
}

// TestOpenVikingTokenWholeOrAbsent: in no state of an OpenViking heal does the session's lock
// token exist but fail to parse. Regression: the token was created with O_EXCL and written
// without fsync, so a power cut could leave it empty-sized with NULs, which OpenViking's
// lockers reject outright (their acquire fails until someone removes the file).
func TestOpenVikingTokenWholeOrAbsent(t *testing.T) {
	tgs, err := sampleTargets("openviking/corrupt_truncated_messages")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "w00")
	os.Mkdir(dir, 0o755)
	rc := record(t, tgs[0], dir)
	tokens, states := 0, 0
	for _, o := range rc.ops {
		if filepath.Base(o.Path) == ".path.ovlock" && (o.Kind == "link" || o.Kind == "create") {
			tokens++
		}
	}
	if tokens == 0 {
		t.Fatalf("no token taken: %s", kinds(rc.ops))
	}
	States(rc.ops, rc.from, 4096, rand.New(rand.NewPCG(3, 3)), func(s State) bool {
		states++
		for _, l := range ovLocks(Build(rc.init, rc.ops, s)) {
			t.Fatalf("%s; %s", l, s.Describe(rc.ops))
		}
		return true
	})
	t.Logf("%d states", states)
}
