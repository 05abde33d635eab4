package heal

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"
)

// Identity pins the exact version of a file that was read: if any field moved, the app
// touched the file and every plan made from the old bytes is void.
type Identity struct {
	Dev   uint64    `json:"dev"`
	Ino   uint64    `json:"ino"`
	Size  int64     `json:"size"`
	Mtime time.Time `json:"mtime"`
	Ctime time.Time `json:"ctime"`
	Mode  uint32    `json:"mode"`
	UID   uint32    `json:"uid"`
	GID   uint32    `json:"gid"`
	Nlink uint64    `json:"nlink"`
}

func identityOf(fi os.FileInfo) Identity {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return Identity{Size: fi.Size(), Mtime: fi.ModTime(), Mode: uint32(fi.Mode().Perm())}
	}
	return identityOfStat(st)
}

// sameWrite reports whether two identities name the same inode, not written since: a rename
// changes its ctime (and link count), only a write its size or mtime.
func (a Identity) sameWrite(b Identity) bool {
	return a.Ino == b.Ino && a.Size == b.Size && a.Mtime.Equal(b.Mtime)
}

// Same reports whether two identities name the same, unchanged file version.
func (a Identity) Same(b Identity) bool {
	return a.Dev == b.Dev && a.Ino == b.Ino && a.Size == b.Size &&
		a.Mtime.Equal(b.Mtime) && a.Ctime.Equal(b.Ctime)
}

// faultHook, when set, is asked before each file operation a heal performs; an error it
// returns becomes that operation's error. It is the seam of the I/O-fault tests.
var faultHook atomic.Pointer[func(op, path string) error]

// SetFaultHook installs (or, with nil, removes) the fault hook: f is called with the
// operation ("create", "chown", "chmod", "write", "fsync", "close", "rename", "link",
// "truncate", "fsync-dir", "mkdir") and the path, before the operation.
func SetFaultHook(f func(op, path string) error) {
	if f == nil {
		faultHook.Store(nil)
		return
	}
	faultHook.Store(&f)
}

func fault(op, path string) error {
	if f := faultHook.Load(); f != nil {
		if err := (*f)(op, path); err != nil {
			return &os.PathError{Op: op, Path: path, Err: err}
		}
	}
	return nil
}

var (
	errNotRegular = errors.New("not a regular file")
	errChanged    = errors.New("file changed while it was read")
	errTooLarge   = errors.New("file larger than the policy's max_file_size")
)

// readStable reads a regular file without following a final symlink, checking that its
// identity did not move while it was read. It works on the raw descriptor: open, fstat,
// read, fstat, close, and nothing else (this runs once per file of every scan).
func readStable(path string, maxSize int64) ([]byte, Identity, error) {
	return readStableBelow(path, maxSize, 0)
}

// errBig: the file is over the caller's size for reading whole (readStableBelow).
var errBig = errors.New("file too big to read whole")

// readStableBelow is readStable, except that a file larger than big (when big > 0) is not
// read: it returns errBig and the file's identity, for the caller to stream it.
func readStableBelow(path string, maxSize, big int64) ([]byte, Identity, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	for err == syscall.EINTR {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	}
	if err != nil {
		if err == syscall.ELOOP {
			return nil, Identity{}, errNotRegular
		}
		return nil, Identity{}, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, Identity{}, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil, Identity{}, errNotRegular
	}
	id := identityOfStat(&st)
	if maxSize > 0 && id.Size > maxSize {
		return nil, id, errTooLarge
	}
	if big > 0 && id.Size > big {
		return nil, id, errBig
	}
	// One byte more than the size: a read that fills it means the file grew meanwhile.
	data := make([]byte, id.Size+1)
	n := 0
	for n <= int(id.Size) {
		m, err := syscall.Read(fd, data[n:])
		if err == syscall.EINTR || err == syscall.EAGAIN {
			continue
		}
		if err != nil {
			return nil, id, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if m == 0 {
			break
		}
		n += m
		if n == int(id.Size) {
			break // all of it; growth after this read shows in the second fstat
		}
	}
	var st2 syscall.Stat_t
	if err := syscall.Fstat(fd, &st2); err != nil {
		return nil, id, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if !identityOfStat(&st2).Same(id) || int64(n) != id.Size {
		return nil, id, errChanged
	}
	return data[:n:n], id, nil
}

// statIdentity is the identity now at path (without following a symlink).
func statIdentity(path string) (Identity, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return Identity{}, err
	}
	if !fi.Mode().IsRegular() {
		return Identity{}, errNotRegular
	}
	return identityOf(fi), nil
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// TempSuffix marks sessionmedic's own temp files: `.<name>.sessionmedic-<hex>.tmp`.
const TempSuffix = ".tmp"

func tempName(target string) string {
	base := filepath.Base(target)
	// A name may be 255 bytes long; the temp's own affixes must fit beside it.
	const affixes = len(".") + len(".sessionmedic-") + 12 + len(TempSuffix)
	if len(base) > 255-affixes {
		base = base[:255-affixes]
	}
	return filepath.Join(filepath.Dir(target), "."+base+".sessionmedic-"+randHex(6)+TempSuffix)
}

func syncDir(dir string) error {
	if err := fault("fsync-dir", dir); err != nil {
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

// writeTemp creates the temp file tmp (a full path) in the directory d with the given mode
// and owner, writes c (reading the original, when c needs it, from src) and fsyncs it. When
// want is set, what was written must have that sha256 (the bytes the plan was made from).
// The caller renames or removes it.
func writeTemp(d *parentDir, tmp string, c content, src io.ReaderAt, want string, mode os.FileMode, uid, gid int) (Identity, error) {
	name := filepath.Base(tmp)
	if err := fault("create", tmp); err != nil {
		return Identity{}, fmt.Errorf("create temp: %w", err)
	}
	f, err := d.openFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return Identity{}, fmt.Errorf("create temp: %w", err)
	}
	fail := func(err error) error {
		f.Close()
		d.remove(name)
		return err
	}
	if uid >= 0 && (uid != os.Geteuid() || gid != os.Getegid()) {
		if err := orFault("chown", tmp, func() error { return f.Chown(uid, gid) }); err != nil && !errors.Is(err, syscall.EPERM) {
			return Identity{}, fail(fmt.Errorf("chown temp: %w", err))
		}
	}
	if err := orFault("chmod", tmp, func() error { return f.Chmod(mode) }); err != nil {
		return Identity{}, fail(fmt.Errorf("chmod temp: %w", err))
	}
	if err := orFault("write", tmp, func() error {
		got, err := c.writeTo(f, src)
		if err == nil && want != "" && got != "" && got != want {
			err = busyErr("the bytes to write changed since they were planned")
		}
		return err
	}); err != nil {
		return Identity{}, fail(fmt.Errorf("write temp: %w", err))
	}
	if err := orFault("fsync", tmp, f.Sync); err != nil {
		return Identity{}, fail(fmt.Errorf("fsync temp: %w", err))
	}
	// What we wrote, as the file's identity shows it: the daemon tells the event of its own
	// write from an app's later one by it.
	fi, err := f.Stat()
	if err != nil {
		return Identity{}, fail(fmt.Errorf("stat temp: %w", err))
	}
	if err := orFault("close", tmp, f.Close); err != nil {
		d.remove(name)
		return Identity{}, fmt.Errorf("close temp: %w", err)
	}
	return identityOf(fi), nil
}

// writeNew writes data to a new file at path (which must not exist), fsyncing it when sync
// is set. On failure the file is removed.
func writeNew(path string, data []byte, mode os.FileMode, sync bool) error {
	if err := fault("create", path); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, mode)
	if err != nil {
		return err
	}
	err = orFault("write", path, func() error { _, err := f.Write(data); return err })
	if err == nil && sync {
		err = orFault("fsync", path, f.Sync)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}

// writeDurable writes data to a new file at path (which must not exist) and fsyncs it and its
// directory. Used for sessionmedic's own state.
func writeDurable(path string, data []byte, mode os.FileMode) error {
	if err := writeNew(path, data, mode, true); err != nil {
		return err
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		os.Remove(path) // not durable: the caller treats it as never written
		return err
	}
	return nil
}

// orFault runs op unless the fault hook fails it first.
func orFault(name, path string, op func() error) error {
	if err := fault(name, path); err != nil {
		return err
	}
	return op()
}

// replaceAtomic atomically replaces (or creates) path with data through a temp file and a
// rename, without fsync. It is for last-good copies only: a copy is validated before it is
// ever restored, so one torn by a power loss is never used, and losing one loses only a
// safety net, while an fsync per healthy save would cost the host a disk flush each time.
func replaceAtomic(path string, data []byte, mode os.FileMode) error {
	tmp := tempName(path)
	if err := writeNew(tmp, data, mode, false); err != nil {
		return err
	}
	if err := orFault("rename", path, func() error { return os.Rename(tmp, path) }); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// mkdirAllSync creates dir and fsyncs each parent it created.
func mkdirAllSync(dir string) error {
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return nil
	}
	if err := mkdirAllSync(filepath.Dir(dir)); err != nil {
		return err
	}
	if err := orFault("mkdir", dir, func() error { return os.Mkdir(dir, 0o700) }); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return syncDir(filepath.Dir(dir))
}

// writeNewFrom is writeNew for content streamed from src (with the same fault points); it
// returns the sha256 of what it wrote, and fsyncs the file and its directory.
func writeDurableFrom(path string, c content, src io.ReaderAt, mode os.FileMode) (string, error) {
	if err := fault("create", path); err != nil {
		return "", err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, mode)
	if err != nil {
		return "", err
	}
	var sum string
	err = orFault("write", path, func() error {
		w := bufio.NewWriterSize(f, streamBuf)
		var err error
		if sum, err = c.writeTo(w, src); err == nil {
			err = w.Flush()
		}
		return err
	})
	if err == nil {
		err = orFault("fsync", path, f.Sync)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		os.Remove(path)
		return "", err
	}
	return sum, nil
}
