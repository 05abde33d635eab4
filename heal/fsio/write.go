package fsio

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// FS performs sessionmedic's writes. Its zero value does real I/O and injects nothing.
type FS struct {
	// Faults, when set, is asked before each file operation with the operation ("create",
	// "chown", "chmod", "write", "fsync", "close", "rename", "link", "truncate", "fsync-dir",
	// "mkdir", "unlink") and the path; an error it returns becomes that operation's error (as an
	// *os.PathError). It is the seam of the I/O-fault tests.
	Faults func(op, path string) error
}

func (fs FS) fault(op, path string) error {
	if fs.Faults != nil {
		if err := fs.Faults(op, path); err != nil {
			return &os.PathError{Op: op, Path: path, Err: err}
		}
	}
	return nil
}

// Do runs op unless Faults fails it first.
func (fs FS) Do(name, path string, op func() error) error {
	if err := fs.fault(name, path); err != nil {
		return err
	}
	return op()
}

// ErrBusy: the file (or the bytes to write) changed under a write; the write was abandoned.
var ErrBusy = errors.New("busy")

// ErrNoLease: a write lease was refused (another descriptor has the file open, the file
// system has no leases, the process may not take one).
var ErrNoLease = errors.New("no write lease")

// Content is what a temp file receives: bytes in memory, or bytes read from an original.
type Content interface {
	// WriteOut writes the content to w, reading the original (when it needs it) from src,
	// and returns the sha256 of what it wrote ("" when it does not compute one).
	WriteOut(w io.Writer, src io.ReaderAt) (sha string, err error)
}

// bufSize is the buffer of a streamed write.
const bufSize = 1 << 20

// RandHex is n random bytes in hexadecimal.
func RandHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// TempSuffix marks sessionmedic's own temp files: `.~<name>.sessionmedic-<hex>.tmp`.
const TempSuffix = ".tmp"

// TempName is a fresh name for a temp file beside target. It starts with ".~", so that it
// matches neither the app's session names nor the dot-names apps give their own temps
// (Codex's ".rollout-*"), and ends in ".tmp", which no app lists as a session.
func TempName(target string) string {
	base := filepath.Base(target)
	// A name may be 255 bytes long; the temp's own affixes must fit beside it.
	const affixes = len(".~") + len(".sessionmedic-") + 12 + len(TempSuffix)
	if len(base) > 255-affixes {
		base = base[:255-affixes]
	}
	return filepath.Join(filepath.Dir(target), ".~"+base+".sessionmedic-"+RandHex(6)+TempSuffix)
}

// SyncDir fsyncs the directory dir.
func (fs FS) SyncDir(dir string) error {
	if err := fs.fault("fsync-dir", dir); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync dir %s: %w", dir, err)
	}
	return nil
}

// WriteTemp creates the temp file tmp (a full path) in the directory d with the given mode
// and owner, writes c (reading the original, when c needs it, from src) and fsyncs it. When
// want is set, what was written must have that sha256 (the bytes the plan was made from);
// other bytes are an ErrBusy. A FileContent read from an original *os.File is copied by the
// kernel and hashed by nobody (see FileContent): its caller re-checks the original's identity
// before the temp is used, as it does anyway. The caller renames or removes it.
func (d *Dir) WriteTemp(tmp string, c Content, src io.ReaderAt, want string, mode os.FileMode, uid, gid int) (Identity, error) {
	id, _, err := d.writeTemp(tmp, c, src, want, false, mode, uid, gid)
	return id, err
}

// WriteTempSum is WriteTemp of content whose sha256 its caller does not know yet: it is
// taken while the file is written (beside the kernel's copy and the fsync, reading the same
// bytes from src) and returned with the file's identity.
func (d *Dir) WriteTempSum(tmp string, c Content, src io.ReaderAt, mode os.FileMode, uid, gid int) (Identity, string, error) {
	return d.writeTemp(tmp, c, src, "", true, mode, uid, gid)
}

func (d *Dir) writeTemp(tmp string, c Content, src io.ReaderAt, want string, summed bool, mode os.FileMode, uid, gid int) (_ Identity, sum string, _ error) {
	name := filepath.Base(tmp)
	if err := d.fs.fault("create", tmp); err != nil {
		return Identity{}, "", fmt.Errorf("create temp: %w", err)
	}
	// Created as the directory's owner when the Dir acts as one, in the group the file must
	// have: then it already has its owner and group, and no chown is needed.
	f, err := d.openFileAs(gid, name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return Identity{}, "", fmt.Errorf("create temp: %w", err)
	}
	fail := func(err error) error {
		f.Close()
		d.Remove(name)
		return err
	}
	// The new file must belong to whom the old one did (or, for a new one, to the owner of
	// its directory): a heal that would change a file's owner or group is refused, never
	// made with another owner (a non-root process cannot give a file away: EPERM; nor can
	// root acting as the directory's owner).
	if fi, err := f.Stat(); err == nil && uid >= 0 {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && (int(st.Uid) != uid || int(st.Gid) != gid) {
			if err := d.fs.Do("chown", tmp, func() error { return d.as(gid, func() error { return f.Chown(uid, gid) }) }); err != nil {
				return Identity{}, "", fail(fmt.Errorf("the healed file must keep owner %d and group %d, and they cannot be given to it here (%w): not healed", uid, gid, err))
			}
		}
	}
	if err := d.fs.Do("chmod", tmp, func() error { return f.Chmod(mode) }); err != nil {
		return Identity{}, "", fail(fmt.Errorf("chmod temp: %w", err))
	}
	// ACLs and extended attributes go with the file's contents: a heal that cannot keep
	// them is refused (an ACL's mask would otherwise widen or narrow what others may do).
	if of, ok := src.(*os.File); ok && of != nil {
		if err := d.fs.Do("setxattr", tmp, func() error { return copyXattrs(int(of.Fd()), int(f.Fd())) }); err != nil {
			return Identity{}, "", fail(err)
		}
	}
	// The sum asked for is read beside a copy the kernel makes, and through the fsync that
	// follows it, on another CPU (a write through a buffer hashes what it writes).
	var aside *sumAside
	if summed && kernelWrites(c, src) {
		aside = sumBeside(c, src)
		defer aside.wait()
	}
	if err := d.fs.Do("write", tmp, func() error {
		got, err := writeContent(f, c, src, true, false)
		if err == nil && want != "" && got != "" && got != want {
			err = fmt.Errorf("%w: %s", ErrBusy, "the bytes to write changed since they were planned")
		}
		sum = got
		return err
	}); err != nil {
		return Identity{}, "", fail(fmt.Errorf("write temp: %w", err))
	}
	if err := d.fs.Do("fsync", tmp, f.Sync); err != nil {
		return Identity{}, "", fail(fmt.Errorf("fsync temp: %w", err))
	}
	switch {
	case !summed:
		sum = ""
	case aside != nil:
		var err error
		if sum, err = aside.wait(); err != nil {
			return Identity{}, "", fail(fmt.Errorf("sum of the temp's bytes: %w", err))
		}
	case sum == "":
		var err error
		if sum, err = ContentSum(c, src); err != nil {
			return Identity{}, "", fail(fmt.Errorf("sum of the temp's bytes: %w", err))
		}
	}
	// What we wrote, as the file's identity shows it: the daemon tells the event of its own
	// write from an app's later one by it.
	fi, err := f.Stat()
	if err != nil {
		return Identity{}, "", fail(fmt.Errorf("stat temp: %w", err))
	}
	if err := d.fs.Do("close", tmp, f.Close); err != nil {
		d.Remove(name)
		return Identity{}, "", fmt.Errorf("close temp: %w", err)
	}
	return IdentityOf(fi), sum, nil
}

// WriteNew writes data to a new file at path (which must not exist), fsyncing it when sync
// is set. On failure the file is removed.
func (fs FS) WriteNew(path string, data []byte, mode os.FileMode, sync bool) error {
	if err := fs.fault("create", path); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, mode)
	if err != nil {
		return err
	}
	err = fs.Do("write", path, func() error { _, err := f.Write(data); return err })
	if err == nil && sync {
		err = fs.Do("fsync", path, f.Sync)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}

// WriteDurable writes data to a new file at path (which must not exist) and fsyncs it and its
// directory. Used for sessionmedic's own state.
func (fs FS) WriteDurable(path string, data []byte, mode os.FileMode) error {
	if err := fs.WriteNew(path, data, mode, true); err != nil {
		return err
	}
	if err := fs.SyncDir(filepath.Dir(path)); err != nil {
		os.Remove(path) // not durable: the caller treats it as never written
		return err
	}
	return nil
}

// ReplaceAtomic atomically replaces (or creates) path with data through a temp file and a
// rename, without fsync. It is for last-good copies only: a copy is validated before it is
// ever restored, so one torn by a power loss is never used, and losing one loses only a
// safety net, while an fsync per healthy save would cost the host a disk flush each time.
func (fs FS) ReplaceAtomic(path string, data []byte, mode os.FileMode) error {
	tmp := TempName(path)
	if err := fs.WriteNew(tmp, data, mode, false); err != nil {
		return err
	}
	if err := fs.Do("rename", path, func() error { return os.Rename(tmp, path) }); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// ReplaceAtomicFrom is ReplaceAtomic of content streamed from src, never held; keep, given
// the hex sha256 WriteOut returned for what was written ("" when kernel let the kernel copy a
// FileContent), says whether to put it in place (false: the temp is removed, nothing
// replaced).
func (fs FS) ReplaceAtomicFrom(path string, c Content, src io.ReaderAt, mode os.FileMode, kernel bool, keep func(sum string) bool) error {
	tmp := TempName(path)
	sum, err := fs.writeNewFrom(tmp, c, src, mode, false, kernel)
	if err != nil {
		return err
	}
	if !keep(sum) {
		os.Remove(tmp)
		return nil
	}
	if err := fs.Do("rename", path, func() error { return os.Rename(tmp, path) }); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// MkdirAllSync creates dir and fsyncs each parent it created.
func (fs FS) MkdirAllSync(dir string) error {
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return nil
	}
	if err := fs.MkdirAllSync(filepath.Dir(dir)); err != nil {
		return err
	}
	if err := fs.Do("mkdir", dir, func() error { return os.Mkdir(dir, 0o700) }); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return fs.SyncDir(filepath.Dir(dir))
}

// WriteDurableFrom is WriteDurable for content streamed from src (with the same fault
// points); it returns the sha256 of what it wrote, or "" for a FileContent the kernel copied
// from an *os.File (see FileContent).
func (fs FS) WriteDurableFrom(path string, c Content, src io.ReaderAt, mode os.FileMode) (string, error) {
	sum, err := fs.writeNewFrom(path, c, src, mode, true, true)
	if err == nil {
		if err = fs.SyncDir(filepath.Dir(path)); err != nil {
			os.Remove(path)
		}
	}
	if err != nil {
		return "", err
	}
	return sum, nil
}

// writeNewFrom is WriteNew of content streamed from src: it returns the sha256 WriteOut gave
// for what it wrote, or "" when kernel allows the kernel's copy of a FileContent; on failure
// the file is removed.
func (fs FS) writeNewFrom(path string, c Content, src io.ReaderAt, mode os.FileMode, sync, kernel bool) (string, error) {
	if err := fs.fault("create", path); err != nil {
		return "", err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, mode)
	if err != nil {
		return "", err
	}
	var sum string
	err = fs.Do("write", path, func() error {
		var err error
		sum, err = writeContent(f, c, src, kernel, true)
		return err
	})
	if err == nil && sync {
		err = fs.Do("fsync", path, f.Sync)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return "", err
	}
	return sum, nil
}
