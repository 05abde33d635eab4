package apps

import (
	"reflect"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// FuzzCopawElemFields: a history element built only as copawElem names gets the verdict it
// gets built two levels down (the checklist's build before it read only these).
func FuzzCopawElemFields(f *testing.F) {
	for _, s := range []string{
		`[{"id": "m1", "name": "user", "role": "user", "content": "hi \u00e9", "metadata": {}}, []]`,
		`[{"name": "a", "content": [{"type": "text", "text": "x"}], "role": "assistant"}, ["hint", "compressed"]]`,
		`[{"name": "a", "content": "x"}, ["hint"]]`,
		`[{"name": "a", "content": "x", "role": "user"}, ["hint", 1]]`,
		`[{"name": "a", "content": "x", "role": "user"}, "marks"]`,
		`[{"name": "a", "content": "x", "role": "user"}]`,
		`[[1], []]`,
		`{"name": "a", "content": "x", "role": "user", "role": null}`,
		`{"name": "a", "content": "x"}`,
		`"text"`, `7`, `null`, `[]`, `{}`,
	} {
		f.Add([]byte(s))
	}
	d := copaw{}.Dialect()
	f.Fuzz(func(t *testing.T, b []byte) {
		if jsonv.Valid(b, d) != nil {
			return
		}
		old := jsonv.ParseDepthValid(b, d, 2)
		now := jsonv.ParseFieldsValid(b, d, copawElem)
		for _, i := range []int{0, 3} {
			if got, want := copawMessageProblem(i, now), copawMessageProblem(i, old); !reflect.DeepEqual(got, want) {
				t.Fatalf("%q: fields-built verdict %+v, depth-built %+v", b, got, want)
			}
		}
	})
}
