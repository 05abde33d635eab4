package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

const sidecarFile = "kubernetes/sidecar.yaml"

// manifest is one YAML file of several documents, as nodes (for the comments) and as values.
type manifest struct {
	nodes []*yaml.Node
	docs  []map[string]any
}

func readManifest(t *testing.T, name string) manifest {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var d map[string]any
		if err := n.Decode(&d); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		m.nodes = append(m.nodes, &n)
		m.docs = append(m.docs, d)
	}
	return m
}

// comments returns every comment of the file, each as one line of text without its "#".
func (m manifest) comments() []string {
	var out []string
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		for _, c := range []string{n.HeadComment, n.LineComment, n.FootComment} {
			for _, l := range strings.Split(c, "\n") {
				if l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "#")); l != "" {
					out = append(out, l)
				}
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	for _, n := range m.nodes {
		walk(n)
	}
	return out
}

// kind returns the first document of that kind.
func (m manifest) kind(t *testing.T, kind string) map[string]any {
	t.Helper()
	for _, d := range m.docs {
		if d["kind"] == kind {
			return d
		}
	}
	t.Fatalf("no %s in the manifest", kind)
	return nil
}

// get walks maps by key and lists by the "name" of their items.
func get(v any, keys ...string) any {
	for _, k := range keys {
		switch t := v.(type) {
		case map[string]any:
			v = t[k]
		case []any:
			v = nil
			for _, it := range t {
				if m, ok := it.(map[string]any); ok && m["name"] == k {
					v = m
				}
			}
		default:
			return nil
		}
	}
	return v
}

// sidecar returns the sessionmedic container of the Deployment's pod.
func sidecar(t *testing.T, m manifest) map[string]any {
	t.Helper()
	c, ok := get(m.kind(t, "Deployment"), "spec", "template", "spec", "initContainers", "sessionmedic").(map[string]any)
	if !ok {
		t.Fatal("the Deployment has no init container named sessionmedic")
	}
	return c
}

// bytesOf parses a memory figure: a Kubernetes quantity (256Mi), a Go GOMEMLIMIT (192MiB)
// or prose (162 MiB).
func bytesOf(s string) (int64, error) {
	m := regexp.MustCompile(`^(\d+(?:\.\d+)?) ?([KMG])i(?:B)?$`).FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, fmt.Errorf("%q is not a memory figure in Ki, Mi or Gi", s)
	}
	f, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, err
	}
	shift := map[string]uint{"K": 10, "M": 20, "G": 30}[m[2]]
	return int64(f * float64(int64(1)<<shift)), nil
}

// memorySet is what the sidecar's manifest sets for memory.
type memorySet struct {
	limit, request, gomemlimit string
}

func sidecarMemory(t *testing.T, m manifest) memorySet {
	t.Helper()
	c := sidecar(t, m)
	s := memorySet{
		limit:   fmt.Sprint(get(c, "resources", "limits", "memory")),
		request: fmt.Sprint(get(c, "resources", "requests", "memory")),
	}
	if v, ok := get(c, "env", "GOMEMLIMIT", "value").(string); ok {
		s.gomemlimit = v
	}
	for what, v := range map[string]string{"limits.memory": s.limit, "requests.memory": s.request, "GOMEMLIMIT": s.gomemlimit} {
		if _, err := bytesOf(v); err != nil {
			t.Fatalf("the sidecar's %s: %v", what, err)
		}
	}
	return s
}

var (
	// A figure the text says is set: the key, a space, the value (limits.memory 256Mi,
	// GOMEMLIMIT 192MiB). "GOMEMLIMIT=160MiB" is the condition a figure was measured
	// under, not a claim about the manifest.
	claimRE = regexp.MustCompile(`\b(limits\.memory|requests\.memory|GOMEMLIMIT) (\d+(?:\.\d+)?[KMG]iB?)\b`)
	// A Kubernetes quantity (256Mi; not 256 MiB), with or without a space before its unit.
	quantityRE = regexp.MustCompile(`\b\d+(?:\.\d+)? ?[KMG]i\b`)
	// A figure in MiB or GiB, as measurements are quoted.
	mibRE = regexp.MustCompile(`\b\d+(?:\.\d+)? ?[KMG]iB\b`)
)

// checkClaims reports each keyed figure of text that is not what the manifest sets, and
// each Kubernetes quantity written without its key that is not limits.memory. It returns the
// keys text states.
func checkClaims(t *testing.T, where, text string, set memorySet) map[string]bool {
	t.Helper()
	want := map[string]string{"limits.memory": set.limit, "requests.memory": set.request, "GOMEMLIMIT": set.gomemlimit}
	stated := map[string]bool{}
	for _, c := range claimRE.FindAllStringSubmatch(text, -1) {
		stated[c[1]] = true
		got, _ := bytesOf(c[2])
		w, _ := bytesOf(want[c[1]])
		if got != w {
			t.Errorf("%s: %s %s, but %s sets %s", where, c[1], c[2], sidecarFile, want[c[1]])
		}
	}
	// Unkeyed quantities: the only one prose speaks of is the sidecar's limit.
	for _, q := range quantityRE.FindAllString(claimRE.ReplaceAllString(text, ""), -1) {
		got, _ := bytesOf(q)
		w, _ := bytesOf(set.limit)
		if got != w {
			t.Errorf("%s: %q as the sidecar's memory, but %s sets limits.memory %s (write a quantity after its key: requests.memory 64Mi)", where, q, sidecarFile, set.limit)
		}
	}
	return stated
}

// TestSidecarMemoryFigures: the sidecar's comments say what its manifest sets for memory
// (limits.memory, requests.memory and GOMEMLIMIT, each written after its key), every memory
// figure they quote as measured lies below the limit, GOMEMLIMIT is below the limit, and the
// prose that quotes the sidecar's limit (README, docs/SECURITY.md, .ci/container-check) quotes
// the same.
func TestSidecarMemoryFigures(t *testing.T) {
	m := readManifest(t, sidecarFile)
	set := sidecarMemory(t, m)
	limit, _ := bytesOf(set.limit)
	soft, _ := bytesOf(set.gomemlimit)
	if soft >= limit {
		t.Errorf("GOMEMLIMIT %s is not below limits.memory %s", set.gomemlimit, set.limit)
	}

	text := strings.Join(m.comments(), " ")
	stated := checkClaims(t, sidecarFile+" (a comment)", text, set)
	for _, k := range []string{"limits.memory", "GOMEMLIMIT"} {
		if !stated[k] {
			t.Errorf("%s: no comment says the %s it sets (write %q)", sidecarFile, k, k+" "+map[string]string{"limits.memory": set.limit, "GOMEMLIMIT": set.gomemlimit}[k])
		}
	}
	measured := 0
	for _, f := range mibRE.FindAllString(claimRE.ReplaceAllString(text, ""), -1) {
		b, _ := bytesOf(f)
		measured++
		if b >= limit {
			t.Errorf("%s (a comment): %s measured, not below limits.memory %s", sidecarFile, f, set.limit)
		}
	}
	if measured == 0 {
		t.Errorf("%s: no comment quotes a measured peak (in MiB)", sidecarFile)
	}

	for _, f := range []string{"README.md", "docs/SECURITY.md", ".ci/container-check"} {
		b, err := os.ReadFile(filepath.Join("..", f))
		if err != nil {
			t.Fatal(err)
		}
		checkClaims(t, f, strings.Join(strings.Fields(string(b)), " "), set)
	}
}

// TestSidecarWatchesItsPolicy: the sidecar runs with -config on the policy ConfigMap's file
// and -watch-config, so that an edit of the ConfigMap is reloaded (the kubelet swaps the
// volume's ..data symlink, which the daemon's watch of the file's directory sees), as
// configmap.yaml says; and the ConfigMap is mounted as a directory: with subPath the file
// would never change.
func TestSidecarWatchesItsPolicy(t *testing.T) {
	m := readManifest(t, sidecarFile)
	c := sidecar(t, m)
	var args []string
	for _, a := range get(c, "args").([]any) {
		args = append(args, fmt.Sprint(a))
	}
	config := ""
	for i, a := range args {
		if a == "-config" && i+1 < len(args) {
			config = args[i+1]
		}
	}
	if !slices.Contains(args, "-watch-config") {
		t.Errorf("the sidecar's args %q lack -watch-config: an edit of the policy ConfigMap would not be reloaded", args)
	}
	policyMount := ""
	for _, vm := range get(c, "volumeMounts").([]any) {
		name := fmt.Sprint(get(vm, "name"))
		if get(m.kind(t, "Deployment"), "spec", "template", "spec", "volumes", name, "configMap") == nil {
			continue
		}
		policyMount = fmt.Sprint(get(vm, "mountPath"))
		if get(vm, "subPath") != nil {
			t.Errorf("the policy volume %s is mounted with subPath: it would never be updated", name)
		}
	}
	if policyMount == "" || filepath.Dir(config) != filepath.Clean(policyMount) {
		t.Errorf("-config %q is not a file of the policy ConfigMap's mount %q", config, policyMount)
	}

	// What configmap.yaml tells the operator.
	cm := readManifest(t, "kubernetes/configmap.yaml")
	text := strings.Join(cm.comments(), " ")
	if !strings.Contains(text, "-watch-config") || strings.Contains(text, "restart the pods") {
		t.Errorf("kubernetes/configmap.yaml's comments do not say that an edit is reloaded (-watch-config): %q", text)
	}
}
