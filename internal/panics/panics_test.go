package panics

import (
	"errors"
	"strings"
	"sync"
	"testing"
)

func boom() { panic("boom") }

// A panic on one goroutine of a group is raised again on the one that waits for them, once
// (the first), with the stack it was raised in; none, nothing.
func TestSlotCarriesThePanicToTheWaiter(t *testing.T) {
	var s Slot
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			defer s.Capture()
			if i%2 == 1 {
				boom()
			}
		})
	}
	wg.Wait()
	got := func() (p any) {
		defer func() { p = recover() }()
		s.Rethrow()
		return nil
	}()
	e, ok := got.(*Error)
	if !ok || e.Value != "boom" || !strings.Contains(string(e.Stack), "panics.boom") {
		t.Fatalf("raised %v", got)
	}
	if !strings.HasPrefix(e.At(), "panics_test.go:") || e.Error() != "panic: boom (at "+e.At()+")" {
		t.Errorf("At %q, Error %q", e.At(), e.Error())
	}

	var none Slot
	none.Rethrow() // nothing kept: nothing raised
}

// Recover sets the error of a panic; raised again, an *Error keeps its first stack.
func TestRecover(t *testing.T) {
	var first *Error
	err := func() (err error) {
		defer Recover(&err)
		func() {
			defer func() { first = Of(recover()); panic(first) }()
			boom()
		}()
		return nil
	}()
	var e *Error
	if !errors.As(err, &e) || e != first || !strings.Contains(string(e.Stack), "panics.boom") {
		t.Fatalf("%v", err)
	}
	if err := func() (err error) { defer Recover(&err); return nil }(); err != nil {
		t.Fatalf("no panic: %v", err)
	}
}
