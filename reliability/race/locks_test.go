package race

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

var errLockTimeout = errors.New("lock timeout")

// flockAcquire takes flock(LOCK_EX|LOCK_NB) on path the way the Python apps do: open with
// flags, try, close and retry every poll until timeout. With recheck (PyPI filelock, which
// unlinks its file on release) the locked inode must still be the path's and be linked.
func flockAcquire(ctx context.Context, path string, flags int, recheck bool, poll, timeout time.Duration) (*os.File, time.Duration, error) {
	start := time.Now()
	for {
		f, err := os.OpenFile(path, flags|syscall.O_CLOEXEC, 0o644)
		if err != nil {
			return nil, 0, err
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			if !recheck || sameLinkedInode(f, path) {
				return f, time.Since(start), nil
			}
			f.Close()
			continue
		}
		f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, 0, err
		}
		if time.Since(start) > timeout || ctx.Err() != nil {
			return nil, time.Since(start), errLockTimeout
		}
		time.Sleep(poll)
	}
}

func sameLinkedInode(f *os.File, path string) bool {
	var a, b syscall.Stat_t
	if syscall.Fstat(int(f.Fd()), &a) != nil || a.Nlink == 0 {
		return false
	}
	if syscall.Stat(path, &b) != nil {
		return false
	}
	return a.Dev == b.Dev && a.Ino == b.Ino
}

// flockRelease: PraisonAI unlocks and closes (never unlinks); current filelock (nanobot)
// unlinks the file first.
func flockRelease(f *os.File, path string, unlink bool) {
	if unlink {
		os.Remove(path)
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	f.Close()
}

func uuid4() string {
	var u [16]byte
	rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// ovAcquire takes OpenViking's tree lock <sid>/.path.ovlock: O_CREAT|O_EXCL with the body
// <uuid4>:<unix_ns>:T; a token older than 30s is stale and removed by compare-and-remove.
// It returns the release function (compare-and-remove of our own bytes).
func ovAcquire(ctx context.Context, lockPath string, timeout time.Duration) (func(), time.Duration, error) {
	start := time.Now()
	owner := uuid4()
	for {
		body := []byte(owner + ":" + strconv.FormatInt(time.Now().UnixNano(), 10) + ":T")
		f, err := os.OpenFile(lockPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_CLOEXEC, 0o644)
		if err == nil {
			_, werr := f.Write(body)
			f.Close()
			if werr != nil {
				os.Remove(lockPath)
				return nil, 0, werr
			}
			return func() {
				if cur, err := os.ReadFile(lockPath); err == nil && string(cur) == string(body) {
					os.Remove(lockPath)
				}
			}, time.Since(start), nil
		}
		if !errors.Is(err, os.ErrExist) {
			return nil, 0, err
		}
		if cur, err := os.ReadFile(lockPath); err == nil {
			parts := strings.Split(strings.TrimSpace(string(cur)), ":")
			if len(parts) == 3 {
				if ns, err := strconv.ParseInt(parts[1], 10, 64); err == nil && time.Now().UnixNano()-ns > int64(30*time.Second) {
					if again, err := os.ReadFile(lockPath); err == nil && string(again) == string(cur) {
						os.Remove(lockPath)
					}
					continue
				}
			}
		}
		if time.Since(start) > timeout || ctx.Err() != nil {
			return nil, time.Since(start), errLockTimeout
		}
		time.Sleep(2 * time.Millisecond)
	}
}
