//go:build linux

package hostile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

const (
	healthyLine = `{"role": "user", "content": "hello", "id": "m1"}` + "\n"
	tornTail    = `{"role": "user", "content": "hello", "id": "m1"}` + "\n" + `{"role": "assist`
)

// specialTree lays out a directory with every kind of non-regular file next to one healthy
// and one damaged session, and a file outside the tree that a symlink points at. It returns
// the special paths that must be reported as skipped.
func specialTree(t *testing.T, root, outside string) (special []string, devices bool) {
	t.Helper()
	mustWrite(t, filepath.Join(root, "ok.jsonl"), []byte(healthyLine))
	mustWrite(t, filepath.Join(root, "bad.jsonl"), []byte(tornTail))
	mustWrite(t, filepath.Join(outside, "secret.jsonl"), []byte(tornTail))
	for _, n := range []string{"fifo.jsonl", "fifo.json", "sub/fifo2.jsonl"} {
		p := filepath.Join(root, n)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
		special = append(special, p)
	}
	sock := filepath.Join(root, "sock.jsonl")
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: sock}); err != nil {
		t.Fatal(err)
	}
	syscall.Listen(fd, 1)
	t.Cleanup(func() { syscall.Close(fd) })
	special = append(special, sock)
	// Character devices as root: a /dev/zero clone never ends, a /dev/null clone is empty.
	zero, null := filepath.Join(root, "zero.jsonl"), filepath.Join(root, "null.json")
	if syscall.Mknod(zero, syscall.S_IFCHR|0o644, int(mkdev(1, 5))) == nil && syscall.Mknod(null, syscall.S_IFCHR|0o644, int(mkdev(1, 3))) == nil {
		special = append(special, zero, null)
		devices = true
	}
	for n, target := range map[string]string{
		"link.jsonl":     filepath.Join(outside, "secret.jsonl"),
		"dangling.jsonl": filepath.Join(outside, "nothing.jsonl"),
		"loop.jsonl":     "loop.jsonl",
		"devlink.jsonl":  "/dev/zero",
	} {
		p := filepath.Join(root, n)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		special = append(special, p)
	}
	if err := os.Symlink(outside, filepath.Join(root, "dirlink")); err != nil {
		t.Fatal(err)
	}
	return special, devices
}

func mkdev(major, minor uint32) uint64 {
	return uint64(major)<<8 | uint64(minor)
}

// TestSpecialFilesAreSkipped: FIFOs, sockets, device nodes and symlinks in a scanned tree are
// skipped with a reason; nothing blocks (a FIFO opened for a blocking read would hang the run
// past its deadline, a /dev/zero clone read to its end would never finish); the damaged
// regular file next to them is still healed; nothing outside is touched.
func TestSpecialFilesAreSkipped(t *testing.T) {
	base := t.TempDir()
	root, outside, state := filepath.Join(base, "root"), filepath.Join(base, "outside"), filepath.Join(base, "state")
	special, devices := specialTree(t, root, outside)
	if !devices {
		t.Log("mknod failed: device nodes not covered")
	}
	pol := writePolicy(t, state, fmt.Sprintf("  - {name: j, format: jsonl, paths: [%s], match: [\"*.jsonl\", \"*.json\"]}\n", root))
	before := snapshot(t, []string{state}, root, outside)

	for _, args := range [][]string{
		{"check", "-config", pol, "-json"},
		{"check", "-json", root},
		{"heal", "-config", pol, "-json", "-dry-run"},
	} {
		r := sm(t, runOpts{timeout: 30 * time.Second}, args...)
		got := byPath(t, reports(t, r))
		for _, p := range special {
			rep, ok := got[p]
			if !ok {
				t.Errorf("%v: %s is not reported (want skipped with a reason)", args, p)
				continue
			}
			if rep.Verdict != "skipped" || rep.Detail == "" {
				t.Errorf("%v: %s: %s %q, want skipped with a reason", args, p, rep.Verdict, rep.Detail)
			}
		}
		if got[filepath.Join(root, "bad.jsonl")].Verdict != "damaged" || got[filepath.Join(root, "ok.jsonl")].Verdict != "healthy" {
			t.Errorf("%v: the regular files next to them: %+v %+v", args, got[filepath.Join(root, "bad.jsonl")], got[filepath.Join(root, "ok.jsonl")])
		}
		for p := range got {
			if strings.HasPrefix(p, outside) || strings.Contains(p, "/dirlink/") {
				t.Errorf("%v: followed a symlink out of the tree: %s", args, p)
			}
		}
		if diff := changed(before, snapshot(t, []string{state}, root, outside), nil); len(diff) > 0 {
			t.Errorf("%v wrote: %v", args, diff)
		}
		if _, err := os.Stat(state); args[0] == "check" && err == nil {
			t.Errorf("%v created the state directory", args)
		}
	}

	r := sm(t, runOpts{timeout: 30 * time.Second}, "heal", "-config", pol, "-json")
	got := byPath(t, reports(t, r))
	bad := filepath.Join(root, "bad.jsonl")
	if got[bad].Action != "healed" {
		t.Errorf("heal: %s: %+v", bad, got[bad])
	}
	if diff := changed(before, snapshot(t, []string{state}, root, outside), map[string]bool{bad: true}); len(diff) > 0 {
		t.Errorf("heal wrote more than the damaged file: %v", diff)
	}
	figure("special-files", map[string]any{"special": len(special), "devices": devices, "heal_ms": r.dur.Milliseconds()})
}

// TestDaemonIgnoresSpecialFiles: the daemon over a tree of FIFOs (more than its workers), a
// /dev/zero clone and a socket, with more created while it runs, keeps healing.
func TestDaemonIgnoresSpecialFiles(t *testing.T) {
	base := t.TempDir()
	root, outside, state := filepath.Join(base, "root"), filepath.Join(base, "outside"), filepath.Join(base, "state")
	specialTree(t, root, outside)
	pol := writePolicy(t, state, fmt.Sprintf("  - {name: j, format: jsonl, paths: [%s], match: [\"*.jsonl\", \"*.json\"], settle: 50ms, max_wait: 500ms}\n", root))
	d := startDaemon(t, pol)
	if !eventually(t, 20*time.Second, "the first scan", func() bool { return len(d.events("scan.finished")) > 0 }) {
		t.Fatal(d.log())
	}
	// The damaged file present at start is healed by the first scan.
	eventually(t, 10*time.Second, "bad.jsonl healed", func() bool { return len(d.events("file.healed")) >= 1 })
	// More special files while it runs: every worker would be stuck if one blocked.
	for i := 0; i < 6; i++ {
		p := filepath.Join(root, fmt.Sprintf("late-fifo-%d.jsonl", i))
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if syscall.Mknod(filepath.Join(root, "late-zero.jsonl"), syscall.S_IFCHR|0o644, int(mkdev(1, 5))) != nil {
		t.Log("mknod failed: no late device node")
	}
	time.Sleep(300 * time.Millisecond)
	late := filepath.Join(root, "late.jsonl")
	mustWrite(t, late, []byte(tornTail))
	eventually(t, 10*time.Second, "a damaged file created after the FIFOs healed", func() bool {
		b, _ := os.ReadFile(late)
		return string(b) == healthyLine
	})
	if b, _ := os.ReadFile(filepath.Join(outside, "secret.jsonl")); string(b) != tornTail {
		t.Errorf("the daemon wrote through a symlink: %q", b)
	}
	// No descriptor of a FIFO or device is kept open once the heal in hand is over (the
	// file's bytes land before the heal has finished with the old inode and the directory).
	held := func() []string {
		var out []string
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", d.cmd.Process.Pid))
		for _, fd := range fds {
			if target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", d.cmd.Process.Pid, fd.Name())); err == nil && strings.HasPrefix(target, root) {
				out = append(out, target)
			}
		}
		return out
	}
	eventually(t, time.Minute, "the late heal to be logged", func() bool { return len(d.events("file.healed")) >= 2 })
	if !eventually(t, time.Minute, "no descriptor under the root", func() bool { return len(held()) == 0 }) {
		t.Errorf("the daemon holds open: %q", held())
	}
	d.stop(t)
}

// TestVanishingDirectories: directories are removed and recreated while check, heal and the
// daemon walk them. Nothing may crash or hang, every report is well formed, and nothing
// outside the churned tree and the state directory is written.
func TestVanishingDirectories(t *testing.T) {
	base := t.TempDir()
	root, state, outside := filepath.Join(base, "root"), filepath.Join(base, "state"), filepath.Join(base, "outside")
	mustWrite(t, filepath.Join(outside, "keep.jsonl"), []byte(tornTail))
	const dirs = 60
	fill := func(i int) {
		d := filepath.Join(root, fmt.Sprintf("d%02d", i), "deep", "er")
		os.MkdirAll(d, 0o755)
		for j := 0; j < 4; j++ {
			content := healthyLine
			if j == 0 {
				content = tornTail
			}
			os.WriteFile(filepath.Join(d, fmt.Sprintf("s%d.jsonl", j)), []byte(content), 0o644)
		}
	}
	for i := 0; i < dirs; i++ {
		fill(i)
	}
	pol := writePolicy(t, state, fmt.Sprintf("  - {name: j, format: jsonl, paths: [%s], settle: 30ms, max_wait: 300ms}\n", root))
	// The daemon keeps its own state directory: a CLI heal beside a running daemon on the same
	// state directory is TestHealBesideRunningDaemon.
	dpol := writePolicy(t, filepath.Join(base, "dstate"), fmt.Sprintf("  - {name: j, format: jsonl, paths: [%s], settle: 30ms, max_wait: 300ms}\n", root))
	beforeOutside := snapshot(t, nil, outside)

	var stop atomic.Bool
	var churns atomic.Int64
	var wg sync.WaitGroup
	churn := func(seed int) {
		defer wg.Done()
		for i := seed; !stop.Load(); i += 7 {
			n := i % dirs
			top := filepath.Join(root, fmt.Sprintf("d%02d", n))
			switch i % 3 {
			case 0:
				os.RemoveAll(top)
			case 1:
				os.Rename(top, top+".gone")
				os.RemoveAll(top + ".gone")
			}
			fill(n)
			churns.Add(1)
		}
	}
	wg.Add(2)
	go churn(0)
	go churn(3)

	d := startDaemon(t, dpol)
	runs := 0
	deadline := time.Now().Add(4 * time.Second)
	for time.Now().Before(deadline) {
		for _, cmd := range []string{"check", "heal"} {
			r := sm(t, runOpts{timeout: 30 * time.Second}, cmd, "-config", pol, "-json")
			for _, rep := range reports(t, r) {
				if !strings.HasPrefix(rep.Path, root+"/") {
					t.Errorf("%s reported a path outside the tree: %q", cmd, rep.Path)
				}
			}
			runs++
		}
	}
	stop.Store(true)
	wg.Wait()
	// The daemon survived: a fresh damage is healed.
	last := filepath.Join(root, "after.jsonl")
	mustWrite(t, last, []byte(tornTail))
	eventually(t, 15*time.Second, "a damage after the churn healed", func() bool {
		b, _ := os.ReadFile(last)
		return string(b) == healthyLine
	})
	d.stop(t)
	if diff := changed(beforeOutside, snapshot(t, nil, outside), nil); len(diff) > 0 {
		t.Errorf("written outside the tree: %v", diff)
	}
	// No temp file of ours is left behind in the tree.
	filepath.WalkDir(root, func(p string, de os.DirEntry, err error) error {
		if err == nil && strings.Contains(filepath.Base(p), ".sessionmedic-") {
			t.Errorf("temp file left behind: %s", p)
		}
		return nil
	})
	t.Logf("%d check/heal runs over %d directory churns; daemon healed %d files", runs, churns.Load(), len(d.events("file.healed")))
	figure("vanishing-directories", map[string]any{"runs": runs, "churns": churns.Load(), "daemon_heals": len(d.events("file.healed"))})
}

// TestUnreadableFiles runs check and heal as uid 65534 over files and a directory it may not
// read: each is skipped or named with a reason, nothing crashes, nothing is written.
func TestUnreadableFiles(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the binary as uid 65534 (as root, chmod 000 does not stop a read)")
	}
	base := t.TempDir()
	// Let uid 65534 through the temp directories.
	for p := base; p != "/" && p != os.TempDir(); p = filepath.Dir(p) {
		os.Chmod(p, 0o755)
	}
	root, state := filepath.Join(base, "root"), filepath.Join(base, "state")
	mustWrite(t, filepath.Join(root, "ok.jsonl"), []byte(healthyLine))
	mustWrite(t, filepath.Join(root, "bad.jsonl"), []byte(tornTail))
	secret := filepath.Join(root, "secret.jsonl")
	mustWrite(t, secret, []byte(tornTail))
	os.Chmod(secret, 0)
	hidden := filepath.Join(root, "hidden")
	mustWrite(t, filepath.Join(hidden, "x.jsonl"), []byte(tornTail))
	os.Chmod(hidden, 0)
	os.MkdirAll(state, 0o755)
	os.Chown(state, 65534, 65534)
	home := filepath.Join(base, "home")
	os.MkdirAll(home, 0o755)
	os.Chown(home, 65534, 65534)
	pol := writePolicy(t, state, fmt.Sprintf("  - {name: j, format: jsonl, paths: [%s]}\n", root))
	os.Chmod(filepath.Dir(pol), 0o755)
	os.Chmod(pol, 0o644)
	before := snapshot(t, []string{state}, root)
	nobody := &syscall.Credential{Uid: 65534, Gid: 65534}

	probe := sm(t, runOpts{cred: nobody, home: home}, "version")
	if probe.code != 0 {
		t.Skipf("cannot run the binary as uid 65534: exit %d %s", probe.code, probe.stderr)
	}
	for _, cmd := range []string{"check", "heal"} {
		r := sm(t, runOpts{cred: nobody, home: home}, cmd, "-config", pol, "-json")
		got := byPath(t, reports(t, r))
		if rep := got[secret]; rep.Verdict != "skipped" || !strings.Contains(rep.Detail, "permission") {
			t.Errorf("%s: the unreadable file: %+v (want skipped: permission denied)", cmd, rep)
		}
		// An unreadable directory is reported like an unreadable file: skipped, with the reason.
		if rep := got[hidden]; rep.Verdict != "skipped" || !strings.Contains(rep.Detail, "permission") {
			t.Errorf("%s: the unreadable directory: %+v (want skipped: permission denied)\n%s", cmd, rep, r.stderr)
		}
		if r.code != 2 {
			t.Errorf("%s: exit %d, want 2 (an unreadable path left: not known to be guarded, over the damage found)", cmd, r.code)
		}
		if cmd == "heal" {
			// The directory is root's: the heal cannot write its temp file and must say so.
			if rep := got[filepath.Join(root, "bad.jsonl")]; rep.Action != "refused" || rep.Reason == "" {
				t.Errorf("heal: bad.jsonl in a directory it cannot write: %+v (want refused with a reason)", rep)
			}
		}
		if diff := changed(before, snapshot(t, []string{state}, root), nil); len(diff) > 0 {
			t.Errorf("%s as uid 65534 wrote: %v", cmd, diff)
		}
	}
	os.Chmod(hidden, 0o755)
}

// TestHealBesideRunningDaemon: an operator runs `sessionmedic heal` while the daemon, on the
// same policy and state directory, is busy healing. The one-shot heal must not fail with an
// internal error, and must not "recover" (remove the temp files of, and resolve) heals that
// the live daemon has in flight.
func TestHealBesideRunningDaemon(t *testing.T) {
	base := t.TempDir()
	root, state := filepath.Join(base, "root"), filepath.Join(base, "state")
	const files = 60 // under the daemon's breaker (3 heals per file) for the whole run
	for i := 0; i < files; i++ {
		mustWrite(t, filepath.Join(root, fmt.Sprintf("s%02d.jsonl", i)), []byte(healthyLine))
	}
	quiet := filepath.Join(root, "quiet.jsonl")
	mustWrite(t, quiet, []byte(healthyLine))
	pol := writePolicy(t, state, fmt.Sprintf("  - {name: j, format: jsonl, paths: [%s], settle: 5ms, max_wait: 100ms}\n", root))
	d := startDaemon(t, pol)
	eventually(t, 20*time.Second, "the first scan", func() bool { return len(d.events("scan.finished")) > 0 })
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			os.WriteFile(filepath.Join(root, fmt.Sprintf("s%02d.jsonl", i%files)), []byte(tornTail), 0o644)
			time.Sleep(2 * time.Millisecond)
		}
	}()
	internal, recovered, runs := 0, 0, 0
	var firstInternal, firstRecovered string
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		// A quick heal of one quiet file: the journal recovery at its start is what meets the
		// daemon's heals in flight. (Exit codes are checked here, not by sm.)
		r := smQuiet(t, runOpts{timeout: 30 * time.Second}, "heal", "-config", pol, "-json", quiet)
		runs++
		if r.code != 0 {
			internal++
			if firstInternal == "" {
				firstInternal = fmt.Sprintf("exit %d: %s", r.code, strings.TrimSpace(nonLog(r.stderr)))
			}
		}
		for _, l := range strings.Split(r.stderr, "\n") {
			if strings.Contains(l, `"msg":"journal.recovered"`) {
				recovered++
				if firstRecovered == "" {
					firstRecovered = l
				}
			}
		}
	}
	if internal > 0 {
		t.Errorf("%d of %d `heal` runs beside a running daemon failed; the first: %s", internal, runs, firstInternal)
	}
	if recovered > 0 {
		t.Errorf("%d times a `heal` run beside a running daemon resolved a heal the daemon had in flight; the first: %s", recovered, firstRecovered)
	}
	stop.Store(true)
	wg.Wait()
	time.Sleep(500 * time.Millisecond)
	d.stop(t)
	refusedByRace := 0
	for _, ev := range d.events("file.heal_refused") {
		if strings.Contains(fmt.Sprint(ev["reason"]), "no such file") {
			if refusedByRace == 0 {
				t.Errorf("the daemon's heals fail when a `heal` run removes their temp files: file.heal_refused %s: %s", ev["path"], ev["reason"])
			}
			refusedByRace++
		}
	}
	t.Logf("%d heal runs beside the daemon: %d ended with exit 3, %d daemon heals resolved by the CLI; daemon: %d healed, %d refused for a vanished temp or journal file",
		runs, internal, recovered, len(d.events("file.healed")), refusedByRace)
	figure("heal-beside-daemon", map[string]any{"runs": runs, "exit3": internal, "recovered_live": recovered,
		"daemon_healed": len(d.events("file.healed")), "daemon_refused_vanished": refusedByRace})
}
