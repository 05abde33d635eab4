package watcher

import (
	"container/heap"
	"os"
	"time"
)

// minSettle is the shortest quiet period: a zero one would re-stat a busy file in a loop.
const minSettle = time.Millisecond

// pend is a path waiting to settle.
type pend struct {
	path     string
	settle   time.Duration
	maxWait  time.Duration
	first    time.Time // start of the current period: the first unsettled event, or the last forced delivery
	armed    time.Time // when the quiet timer was last (re)started
	state    fileState // the path's state when the quiet timer was last (re)started
	deadline time.Time // when to look at it next
	index    int       // in the pendQueue
}

// fileState is what two stats must agree on for a path to count as quiet. A missing file is a
// state too.
type fileState struct {
	exists bool
	dir    bool
	size   int64
	mtime  int64 // nanoseconds
	id     fileID
}

func statPath(path string) fileState {
	fi, err := os.Lstat(path)
	if err != nil {
		return fileState{}
	}
	return fileState{
		exists: true,
		dir:    fi.IsDir(),
		size:   fi.Size(),
		mtime:  fi.ModTime().UnixNano(),
		id:     idOf(fi),
	}
}

// touch records an event on path: it (re)starts the path's quiet timer.
func (l *loop) touch(path string) {
	now := time.Now()
	p := l.pending[path]
	if p == nil {
		settle, maxWait := l.w.settle(path)
		p = &pend{path: path, settle: max(settle, minSettle), maxWait: maxWait, first: now}
		l.pending[path] = p
		p.arm(now)
		heap.Push(&l.queue, p)
		return
	}
	p.arm(now)
	heap.Fix(&l.queue, p.index)
}

// arm restarts the quiet timer at now.
func (p *pend) arm(now time.Time) {
	p.armed = now
	p.state = statPath(p.path)
	p.reschedule()
}

func (p *pend) reschedule() {
	p.deadline = p.armed.Add(p.settle)
	if p.maxWait > 0 {
		if force := p.first.Add(p.maxWait); force.Before(p.deadline) {
			p.deadline = force
		}
	}
}

// fire looks at every path whose deadline has come: a path quiet for its settle time whose stat
// has not changed is delivered; one whose stat changed without an event starts a new quiet
// period; one pending longer than its maximum wait is delivered as forced and stays pending.
func (l *loop) fire(now time.Time) {
	for len(l.queue) > 0 && !l.queue[0].deadline.After(now) {
		p := l.queue[0]
		if !now.Before(p.armed.Add(p.settle)) {
			st := statPath(p.path)
			if st == p.state {
				heap.Pop(&l.queue)
				delete(l.pending, p.path)
				if !st.dir { // directories are watched, not reported
					l.out.addEvent(Event{Path: p.path})
				}
				continue
			}
			p.armed, p.state = now, st
		}
		if p.maxWait > 0 && !now.Before(p.first.Add(p.maxWait)) {
			l.out.addEvent(Event{Path: p.path, Forced: true})
			p.first = now
		}
		p.reschedule()
		heap.Fix(&l.queue, 0)
	}
}

// schedule sets the timer for the earliest deadline, or stops it when nothing is pending.
func (l *loop) schedule() {
	if len(l.queue) == 0 {
		if !l.armed.IsZero() {
			l.timer.Stop()
			l.armed = time.Time{}
		}
		return
	}
	next := l.queue[0].deadline
	if next.Equal(l.armed) {
		return
	}
	l.timer.Reset(time.Until(next))
	l.armed = next
}

// pendQueue is a min-heap of pending paths by deadline.
type pendQueue []*pend

func (q pendQueue) Len() int           { return len(q) }
func (q pendQueue) Less(i, j int) bool { return q[i].deadline.Before(q[j].deadline) }
func (q pendQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index = i
	q[j].index = j
}

func (q *pendQueue) Push(x any) {
	p := x.(*pend)
	p.index = len(*q)
	*q = append(*q, p)
}

func (q *pendQueue) Pop() any {
	old := *q
	n := len(old)
	p := old[n-1]
	old[n-1] = nil
	*q = old[:n-1]
	p.index = -1
	return p
}
