package watcher

import "fmt"

// maxErrors bounds the errors waiting for a reader.
const maxErrors = 64

// outbox holds what waits for the readers of Events, Rescans and Errors, so that Run never
// blocks on a slow reader. It lives in the Run goroutine.
//
// Events are kept once per path (a newer verdict replaces the waiting one): the queue is bounded
// by the number of paths. Rescans are a set. Errors are bounded; duplicates of a waiting error
// are dropped, and so are new errors past the bound (counted, and said once there is room).
type outbox struct {
	events  []*Event
	byPath  map[string]*Event
	rescans []string
	rescan  map[string]bool
	errs    []error
	errText map[string]bool
	dropped int
}

func (o *outbox) addEvent(e Event) {
	if q := o.byPath[e.Path]; q != nil {
		q.Forced = e.Forced
		return
	}
	if o.byPath == nil {
		o.byPath = make(map[string]*Event)
	}
	q := &e
	o.byPath[e.Path] = q
	o.events = append(o.events, q)
}

func (o *outbox) popEvent() {
	delete(o.byPath, o.events[0].Path)
	o.events[0] = nil
	o.events = o.events[1:]
}

func (o *outbox) addRescan(root string) {
	if o.rescan[root] {
		return
	}
	if o.rescan == nil {
		o.rescan = make(map[string]bool)
	}
	o.rescan[root] = true
	o.rescans = append(o.rescans, root)
}

func (o *outbox) popRescan() {
	delete(o.rescan, o.rescans[0])
	o.rescans = o.rescans[1:]
}

func (o *outbox) addError(err error) {
	text := err.Error()
	if o.errText[text] {
		return
	}
	if len(o.errs) >= maxErrors-1 {
		o.dropped++
		return
	}
	if o.errText == nil {
		o.errText = make(map[string]bool)
	}
	if o.dropped > 0 {
		o.push(fmt.Errorf("watcher: %d errors dropped (nobody read them in time)", o.dropped))
		o.dropped = 0
	}
	o.push(err)
}

func (o *outbox) push(err error) {
	o.errText[err.Error()] = true
	o.errs = append(o.errs, err)
}

func (o *outbox) popError() {
	delete(o.errText, o.errs[0].Error())
	o.errs[0] = nil
	o.errs = o.errs[1:]
}
