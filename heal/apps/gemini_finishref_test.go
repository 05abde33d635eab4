package apps

import (
	"bytes"

	"github.com/sessionmedic/sessionmedic/heal/format"
)

// gemRefFinishSalvage is FinishSalvage as it was written on the chat held whole, split into
// trees: the reference the streamed finish (FinishSplice) is held to.
func gemRefFinishSalvage(damaged, data []byte) []byte {
	data = gemRefDropOrphanResults(damaged, data)
	lines := format.Split(data, geminiLog{})
	replay := func(skip map[int]bool) bool {
		var r geminiReplay
		first := true
		for i, l := range lines {
			if l.Blank || l.Val == nil || skip[i] {
				continue
			}
			if first {
				first = false
				continue // the metadata record
			}
			r.apply(l.Val, nil)
		}
		return r.resumable()
	}
	if replay(nil) {
		return data
	}
	drop := map[int]bool{}
	for i := len(lines) - 1; i > 0; i-- {
		v := lines[i].Val
		if v == nil {
			continue
		}
		if msgs := v.Get("$set").Get("messages"); isArr(msgs) {
			resumable := false
			for _, m := range arrOf(msgs) {
				resumable = resumable || geminiResumable(m, nil)
			}
			if resumable {
				break
			}
			drop[i] = true
			continue
		}
		if isStr(v.Get("id")) && geminiResumable(v, nil) {
			break
		}
	}
	if len(drop) == 0 || !replay(drop) {
		return data
	}
	var out []byte
	for i, l := range lines {
		if !drop[i] {
			out = append(out, data[l.Start:l.End]...)
		}
	}
	return out
}

// gemRefDropOrphanResults is salvaged without the records that are no whole line of damaged
// (a split recovered them) and answer a tool call that no other kept record makes.
func gemRefDropOrphanResults(damaged, salvaged []byte) []byte {
	whole := map[string]bool{}
	for _, l := range format.Split(damaged, geminiLog{}) {
		if l.Val != nil {
			whole[string(bytes.TrimRight(l.Raw, "\r"))] = true
		}
	}
	lines := format.Split(salvaged, geminiLog{})
	calls := map[string]bool{}
	recovered := map[int][]string{} // a recovered record's tool results' ids
	for i, l := range lines {
		if l.Val == nil {
			continue
		}
		var results []string
		geminiToolIDs(l.Val, "", calls, &results)
		if len(results) > 0 && !whole[string(bytes.TrimRight(l.Raw, "\r"))] {
			recovered[i] = results
		}
	}
	drop := map[int]bool{}
	for i, ids := range recovered {
		for _, id := range ids {
			if !calls[id] {
				drop[i] = true
			}
		}
	}
	if len(drop) == 0 {
		return salvaged
	}
	var out []byte
	for i, l := range lines {
		if !drop[i] {
			out = append(out, salvaged[l.Start:l.End]...)
		}
	}
	return out
}
