package fsio

import (
	"bufio"
	"errors"
	"io"
	"os"
	"syscall"
)

// The errors of the reads. A caller tells them apart with errors.Is.
var (
	ErrNotRegular = errors.New("not a regular file")                          // a symlink, directory, device or pipe
	ErrChanged    = errors.New("file changed while it was read")              // its identity moved during the read
	ErrTooLarge   = errors.New("file larger than the policy's max_file_size") // over the caller's maxSize
)

// ReadStable reads a regular file without following a final symlink, checking that its
// identity did not move while it was read. It works on the raw descriptor: open, fstat,
// read, fstat, close, and nothing else (this runs once per file of every scan).
func ReadStable(path string, maxSize int64) ([]byte, Identity, error) {
	return ReadStableBelow(path, maxSize, 0)
}

// ErrBig: the file is over the caller's size for reading whole (ReadStableBelow).
var ErrBig = errors.New("file too big to read whole")

// ReadStableBelow is ReadStable, except that a file larger than big (when big > 0) is not
// read: it returns ErrBig and the file's identity, for the caller to stream it.
func ReadStableBelow(path string, maxSize, big int64) ([]byte, Identity, error) {
	return ReadStableInto(path, maxSize, big, nil)
}

// ReadStableInto is ReadStableBelow reading into a buffer alloc gives for n bytes (a scan
// reuses its buffers; nil: a new one). The bytes returned are at the start of that buffer.
func ReadStableInto(path string, maxSize, big int64, alloc func(n int) []byte) ([]byte, Identity, error) {
	fd, err := openPath(path, syscall.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if err == syscall.ELOOP {
			return nil, Identity{}, loopErr(path)
		}
		return nil, Identity{}, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, Identity{}, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil, Identity{}, ErrNotRegular
	}
	if foreignLink(path, &st) {
		return nil, Identity{}, &os.PathError{Op: "open", Path: path, Err: ErrForeignLink}
	}
	id := identityOfStat(&st)
	if maxSize > 0 && id.Size > maxSize {
		return nil, id, ErrTooLarge
	}
	if big > 0 && id.Size > big {
		return nil, id, ErrBig
	}
	// One byte more than the size: a read that fills it means the file grew meanwhile.
	var data []byte
	if alloc != nil {
		data = alloc(int(id.Size) + 1)
	}
	if int64(len(data)) < id.Size+1 {
		data = make([]byte, id.Size+1)
	} else {
		data = data[:id.Size+1]
	}
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
		return nil, id, ErrChanged
	}
	return data[:n:n], id, nil
}

// FirstLine is the first line of the regular file at path, without its '\n', read no further
// than max bytes (in 32 KiB steps); complete says a '\n' ended it. It is for the header line
// of a big log, never for judging the file.
func FirstLine(path string, max int64) (line []byte, complete bool) {
	f, _, err := OpenRegular(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	line, err = bufio.NewReaderSize(io.LimitReader(f, max), 32<<10).ReadBytes('\n')
	if err != nil {
		return line, false
	}
	return line[:len(line)-1], true
}
