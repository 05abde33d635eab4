package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"
)

// claudeTree is a Claude config directory's projects tree: n transcripts spread over many
// project slugs, sizes from claudeSizes.
type claudeTree struct {
	files   int
	total   int64 // bytes asked for; the files hold a little more (whole records)
	seed    uint64
	workers int // 0: one per CPU
	// ageDays: the transcripts were last written over this many days before now, evenly
	// (a heavy user's history: most sessions are old, a few are today's); 0: all just now.
	ageDays float64
}

// claudeTreeStats describes a generated tree.
type claudeTreeStats struct {
	Files, Slugs int
	Bytes        int64
	Largest      int64
	Over10MB     int // files of at least 10 MB
	Under1MB     int // files under 1 MB
	Recent       int // files last written within a day (all of them when ageDays is 0)
	RecentBytes  int64
}

// claudeCwd is the i-th project directory of a tree.
func claudeCwd(i int) string {
	org := []string{"src", "work/acme", "code/oss", "projects", "dev/Client Apps"}[i%5]
	name := words[i*7%len(words)] + "-" + words[i*13%len(words)]
	return fmt.Sprintf("/home/user/%s/%s-%d", org, name, i)
}

// gen writes the tree under projects (<config>/projects). Each transcript goes to a slug
// drawn with a skew (a few projects hold many sessions), is written a few MiB at a time by
// one of the workers, and depends only on the seed and its index.
func (t claudeTree) gen(projects string) (claudeTreeStats, error) {
	sizes := claudeSizes(t.files, t.total, t.seed)
	slugs := max(4, t.files/12)
	r := rand.New(rand.NewPCG(t.seed, 0x51a6))
	slugOf := make([]int, t.files)
	used := map[int]bool{}
	for i := range slugOf {
		u := r.Float64()
		slugOf[i] = int(float64(slugs) * u * u)
		used[slugOf[i]] = true
	}
	for i := 0; i < slugs; i++ {
		if used[i] {
			if err := os.MkdirAll(filepath.Join(projects, claudeSlug(claudeCwd(i))), 0o700); err != nil {
				return claudeTreeStats{}, err
			}
		}
	}
	st := claudeTreeStats{Files: t.files, Slugs: len(used)}
	pools := newClaudePools(t.seed)
	workers := t.workers
	if workers <= 0 {
		workers = runtime.NumCPU()
	}
	jobs := make(chan int)
	now := time.Now()
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 0, claudeChunk+256<<10)
			for i := range jobs {
				cwd := claudeCwd(slugOf[i])
				s := newClaudeSession(pools, t.seed<<20+uint64(i), cwd)
				path := filepath.Join(projects, claudeSlug(cwd), s.id+".jsonl")
				n, err := writeTranscript(path, s, sizes[i], buf)
				age := time.Duration(t.ageDays * rand.New(rand.NewPCG(t.seed, uint64(i)+0x9e37)).Float64() * float64(24*time.Hour))
				if err == nil && age > 0 {
					mt := now.Add(-age)
					err = os.Chtimes(path, mt, mt)
				}
				mu.Lock()
				if age < 24*time.Hour {
					st.Recent++
					st.RecentBytes += n
				}
				if err != nil && firstErr == nil {
					firstErr = err
				}
				st.Bytes += n
				st.Largest = max(st.Largest, n)
				if n >= 10e6 {
					st.Over10MB++
				}
				if n < 1e6 {
					st.Under1MB++
				}
				mu.Unlock()
			}
		}()
	}
	for i := range sizes {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return st, firstErr
}

// claudeChunk is how much of a transcript is made before one write.
const claudeChunk = 4 << 20

// writeTranscript writes at least size bytes of s's turns to a new file at path (mode 0600,
// as Claude makes it), a chunk at a time through buf, and returns the bytes written.
func writeTranscript(path string, s *claudeSession, size int64, buf []byte) (int64, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, err
	}
	var n int64
	for n < size {
		buf = s.fill(buf[:0], int(min(size-n, claudeChunk)))
		if _, err := f.Write(buf); err != nil {
			f.Close()
			return n, err
		}
		n += int64(len(buf))
	}
	return n, f.Close()
}
