// Package panics carries a panic from the goroutine where it happened to the goroutine that
// answers for the work, so that a defect met while judging one file is reported for that
// file and the process goes on (heal.Engine contains what a file's inspection and planning
// raise). A goroutine a judge or a planner starts keeps its panic in a [Slot]; the goroutine
// that waits for it raises it again with [Slot.Rethrow], where the engine's [Recover] takes
// it.
package panics

import (
	"fmt"
	"runtime/debug"
	"strings"
	"sync/atomic"
)

// Error is a panic taken by [Recover]: its value, and the stack of the goroutine where it
// was raised first, taken there.
type Error struct {
	Value any
	Stack []byte
}

func (e *Error) Error() string {
	if at := e.At(); at != "" {
		return fmt.Sprintf("panic: %v (at %s)", e.Value, at)
	}
	return fmt.Sprintf("panic: %v", e.Value)
}

// frame is one frame of a stack from debug.Stack: its function (without its arguments) and
// its place ("path/file.go:line").
type frame struct{ fn, at string }

// frames reads a stack from debug.Stack: "goroutine N [...]:" then, for each frame, a line
// with the function and its arguments and one with "\tpath/file.go:line +0x..".
func frames(stack []byte) []frame {
	lines := strings.Split(string(stack), "\n")
	var out []frame
	for i := 1; i+1 < len(lines); i += 2 {
		fn, at := strings.TrimSpace(lines[i]), strings.TrimSpace(lines[i+1])
		if k := strings.LastIndexByte(at, ' '); k > 0 {
			at = at[:k]
		}
		if k := strings.LastIndexByte(fn, '('); k > 0 {
			fn = fn[:k]
		}
		out = append(out, frame{fn, at})
	}
	return out
}

// At is the source line of the function that raised the panic ("file.go:123"), or "".
func (e *Error) At() string {
	// The frames of debug.Stack, of this package and of the runtime's panic come first: the
	// raiser is the frame after the last "panic(" (or the runtime's own, for a fault it
	// raised: a nil dereference, an index).
	fs := frames(e.Stack)
	from := 0
	for i, f := range fs {
		if f.fn == "panic" {
			from = i + 1
		}
	}
	for _, f := range fs[from:] {
		if !strings.HasPrefix(f.fn, "runtime") {
			return f.at[strings.LastIndexByte(f.at, '/')+1:]
		}
	}
	return ""
}

// Trace is a stack from debug.Stack on one line, at most about 2,000 bytes: each frame's
// function and place, innermost first, joined by " < " (what a report of the defect needs).
func Trace(stack []byte) string {
	var b strings.Builder
	for _, f := range frames(stack) {
		if b.Len() >= 2000 {
			break
		}
		if b.Len() > 0 {
			b.WriteString(" < ")
		}
		b.WriteString(f.fn + " " + f.at)
	}
	return b.String()
}

// Of is r, a value recover returned, as an *Error: itself when it is one already (a panic
// raised again by Rethrow), else with the stack of the goroutine that calls Of — the one
// that panicked, when Of runs in its deferred call.
func Of(r any) *Error {
	if e, ok := r.(*Error); ok {
		return e
	}
	return &Error{Value: r, Stack: debug.Stack()}
}

// Recover, deferred (defer panics.Recover(&err)), ends a panic of its goroutine and sets
// *err to it, an *Error.
func Recover(err *error) {
	if r := recover(); r != nil {
		*err = Of(r)
	}
}

// Slot keeps the first panic of a group of goroutines for the goroutine that waits for
// them. Its zero value is empty.
type Slot struct {
	p atomic.Pointer[Error]
}

// Capture, deferred by a goroutine of the group (defer s.Capture()), ends its panic and
// keeps it in s.
func (s *Slot) Capture() {
	if r := recover(); r != nil {
		s.Keep(r)
	}
}

// Keep keeps r, a value recover returned, unless s holds one already: for a goroutine whose
// deferred call must do more than Capture (release what waits for it).
func (s *Slot) Keep(r any) {
	s.p.CompareAndSwap(nil, Of(r))
}

// Rethrow raises on the calling goroutine the panic s keeps, if any.
func (s *Slot) Rethrow() {
	if e := s.p.Load(); e != nil {
		panic(e)
	}
}
