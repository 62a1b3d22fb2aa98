package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/yaml"
)

// badTarget is one resource the bad-input test writes to: where, and a valid object to mutate.
type badTarget struct {
	resource   string // plural, for messages
	collection string // the create URL
	kind       string
	apiVersion string
	cluster    bool // cluster-scoped: names carry the run's prefix
	status     bool // has a status subresource
	// base is a valid object named name (apiVersion, kind and metadata.name included).
	base func(name string) map[string]any
}

func badTargets(ns string) []badTarget {
	now := "2026-12-01T00:00:00Z"
	return []badTarget{{
		resource: "pods", collection: "/api/v1/namespaces/" + ns + "/pods", kind: "Pod", apiVersion: "v1", status: true,
		base: func(name string) map[string]any {
			return obj("v1", "Pod", name, map[string]any{
				"metadata": map[string]any{"name": name, "labels": map[string]any{"app": "bad"}, "annotations": map[string]any{"note": "x"}},
				"spec": map[string]any{
					"activeDeadlineSeconds":         600,
					"terminationGracePeriodSeconds": 1,
					"restartPolicy":                 "Always",
					"nodeSelector":                  map[string]any{"disk": "ssd"},
					"tolerations":                   []any{map[string]any{"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}},
					"containers": []any{map[string]any{
						"name": "c", "image": "busybox:1", "command": []any{"sleep", "3600"},
						"ports":        []any{map[string]any{"containerPort": 8080, "protocol": "TCP"}},
						"env":          []any{map[string]any{"name": "A", "value": "1"}},
						"resources":    map[string]any{"requests": map[string]any{"cpu": "10m", "memory": "16Mi"}, "limits": map[string]any{"cpu": "100m", "memory": "32Mi"}},
						"volumeMounts": []any{map[string]any{"name": "v", "mountPath": "/v"}},
					}},
					"volumes": []any{map[string]any{"name": "v", "emptyDir": map[string]any{"sizeLimit": "1Mi"}}},
				},
			})
		},
	}, {
		resource: "nodes", collection: "/api/v1/nodes", kind: "Node", apiVersion: "v1", cluster: true, status: true,
		base: func(name string) map[string]any {
			return obj("v1", "Node", name, map[string]any{
				"metadata": map[string]any{"name": name, "labels": map[string]any{"badinput": "true"}},
				"spec": map[string]any{"unschedulable": true, "taints": []any{map[string]any{"key": "badinput", "effect": "NoSchedule"}},
					"podCIDRs": []any{"10.250.0.0/24"}},
				"status": map[string]any{"capacity": map[string]any{"cpu": "1", "memory": "1Gi", "pods": "10"},
					"addresses": []any{map[string]any{"type": "InternalIP", "address": "192.0.2.250"}}},
			})
		},
	}, {
		resource: "configmaps", collection: "/api/v1/namespaces/" + ns + "/configmaps", kind: "ConfigMap", apiVersion: "v1",
		base: func(name string) map[string]any {
			return obj("v1", "ConfigMap", name, map[string]any{"data": map[string]any{"a.conf": "x=1", "b": "2"},
				"binaryData": map[string]any{"bin": "AAEC"}})
		},
	}, {
		resource: "secrets", collection: "/api/v1/namespaces/" + ns + "/secrets", kind: "Secret", apiVersion: "v1",
		base: func(name string) map[string]any {
			return obj("v1", "Secret", name, map[string]any{"type": "Opaque", "data": map[string]any{"password": "czNjcjN0"},
				"stringData": map[string]any{"user": "admin"}})
		},
	}, {
		resource: "namespaces", collection: "/api/v1/namespaces", kind: "Namespace", apiVersion: "v1", cluster: true, status: true,
		base: func(name string) map[string]any {
			return obj("v1", "Namespace", name, map[string]any{"metadata": map[string]any{"name": name, "labels": map[string]any{"badinput": "true"}}})
		},
	}, {
		resource: "leases", collection: "/apis/coordination.k8s.io/v1/namespaces/" + ns + "/leases", kind: "Lease", apiVersion: "coordination.k8s.io/v1",
		base: func(name string) map[string]any {
			return obj("coordination.k8s.io/v1", "Lease", name, map[string]any{"spec": map[string]any{
				"holderIdentity": "me", "leaseDurationSeconds": 40, "leaseTransitions": 1, "renewTime": "2026-12-01T00:00:00.000000Z"}})
		},
	}, {
		resource: "events", collection: "/api/v1/namespaces/" + ns + "/events", kind: "Event", apiVersion: "v1",
		base: func(name string) map[string]any {
			return obj("v1", "Event", name, map[string]any{
				"involvedObject": map[string]any{"kind": "Pod", "name": "p", "namespace": ns, "apiVersion": "v1"},
				"reason":         "Started", "message": "started", "type": "Normal", "count": 1,
				"firstTimestamp": now, "lastTimestamp": now, "source": map[string]any{"component": "badinput"}})
		},
	}, {
		resource: "events.events.k8s.io", collection: "/apis/events.k8s.io/v1/namespaces/" + ns + "/events", kind: "Event", apiVersion: "events.k8s.io/v1",
		base: func(name string) map[string]any {
			return obj("events.k8s.io/v1", "Event", name, map[string]any{
				"eventTime": "2026-12-01T00:00:00.000000Z", "reportingController": "example.com/badinput", "reportingInstance": "i-1",
				"action": "Start", "reason": "Started", "note": "started", "type": "Normal",
				"regarding": map[string]any{"kind": "Pod", "name": "p", "namespace": ns, "apiVersion": "v1"}})
		},
	}}
}

// obj is an object of kind with fields merged over apiVersion, kind and metadata.name.
func obj(apiVersion, kind, name string, fields map[string]any) map[string]any {
	o := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name}}
	for k, v := range fields {
		o[k] = v
	}
	return o
}

// badRequest is one request the test sends, and what its mutation was.
type badRequest struct {
	target      *badTarget
	method      string
	path        string // URL path, query included
	contentType string
	body        []byte
	what        string // the mutation, for messages
	// setPath is the field a value was set at ("spec.activeDeadlineSeconds"), when the
	// mutation was only that: a 422 must then name it or a field next to it.
	setPath string
	// createName is the name a successful create makes.
	create bool
}

// badValues are the values set at fields: wrong types, nulls, extreme and negative numbers,
// long and odd strings, nesting.
var badValues = []any{
	nil, true, false, 0, -1, json.Number("-9223372036854775808"), json.Number("9223372036854775807"),
	json.Number("9223372036854775808"), json.Number("1e308"), json.Number("-1e308"), json.Number("1e999"), 1.5,
	"", "x", "-1", "1e999", "NaN", "\u0000", "😀", "a/b", "-", strings.Repeat("l", 64), strings.Repeat("n", 254),
	strings.Repeat("s", 70000), []any{}, map[string]any{}, []any{nil}, map[string]any{"": nil}, []any{"a", 1, nil},
	map[string]any{"foo": map[string]any{"bar": []any{1}}},
}

// badGen makes the requests from one seed: the same seed, the same requests.
type badGen struct {
	r       *rand.Rand
	run     string
	targets []badTarget
	seq     int
	big     int // how many more 1 MiB strings to send
	// stored are the base objects as the API server stored them (defaults, admission), by
	// resource: an update sends one of them changed, as clients do after a get.
	stored map[string]map[string]any
}

func (g *badGen) name(t *badTarget) string {
	g.seq++
	if t.cluster {
		return fmt.Sprintf("%s-m%d", g.run, g.seq)
	}
	return fmt.Sprintf("m%d", g.seq)
}

func (g *badGen) baseName(t *badTarget) string {
	switch {
	case t.cluster:
		return g.run + "-base"
	case t.resource == "events.events.k8s.io":
		return "base-events" // both event APIs store the same objects
	}
	return "base"
}

func (g *badGen) itemPath(t *badTarget, name string) string { return t.collection + "/" + name }

// paths lists every field path of v (maps and lists), as dotted paths with list indexes.
func paths(prefix string, v any, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			*out = append(*out, p)
			paths(p, e, out)
		}
	case []any:
		for i, e := range x {
			p := fmt.Sprintf("%s[%d]", prefix, i)
			*out = append(*out, p)
			paths(p, e, out)
		}
	}
}

var pathPart = regexp.MustCompile(`([^.\[\]]+)|\[(\d+)\]`)

// setAt sets (or with del, removes) the field at path in o; false when path is gone.
func setAt(o map[string]any, path string, v any, del bool) bool {
	parts := pathPart.FindAllStringSubmatch(path, -1)
	var cur any = o
	for i, p := range parts {
		last := i == len(parts)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				if del {
					delete(c, p[1])
				} else {
					c[p[1]] = v
				}
				return true
			}
			cur = c[p[1]]
		case []any:
			var idx int
			fmt.Sscan(p[2], &idx)
			if idx >= len(c) {
				return false
			}
			if last {
				c[idx] = v
				return true
			}
			cur = c[idx]
		default:
			return false
		}
	}
	return false
}

func deepCopyJSON(o map[string]any) map[string]any {
	b, _ := json.Marshal(o)
	var c map[string]any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	_ = d.Decode(&c)
	return c
}

func nested(open, close string, depth int, inner string) string {
	return strings.Repeat(open, depth) + inner + strings.Repeat(close, depth)
}

// mutate returns a mutated body of o (JSON unless the mutation is about another format),
// its content type, what was done and, for a single set field, its path.
func (g *badGen) mutate(t *badTarget, o map[string]any) (body []byte, contentType, what, setPath string, query string) {
	m := deepCopyJSON(o)
	var ps []string
	paths("", m, &ps)
	sort.Strings(ps)
	contentType = "application/json"
	// Other tests share the cluster: a node made here must never take their pods, so its
	// spec (unschedulable, tainted) stays as it is.
	keepNodeSpec := func() {
		if t.resource == "nodes" {
			m["spec"] = deepCopyJSON(o)["spec"]
		}
	}
	switch k := g.r.Intn(100); {
	case k < 40: // one field set to a bad value
		p := ps[g.r.Intn(len(ps))]
		v := badValues[g.r.Intn(len(badValues))]
		setAt(m, p, v, false)
		what, setPath = fmt.Sprintf("set %s to %.40v", p, v), p
	case k < 48: // a field removed
		p := ps[g.r.Intn(len(ps))]
		setAt(m, p, nil, true)
		what = "removed " + p
	case k < 56: // an unknown field, strictly or not
		p := ps[g.r.Intn(len(ps))]
		setAt(m, p+".foo", "bar", false)
		if _, ok := m["spec"].(map[string]any); ok && g.r.Intn(2) == 0 {
			m["spec"].(map[string]any)["foo"] = "bar"
		}
		what = "unknown field under " + p
		query = []string{"fieldValidation=Strict", "fieldValidation=Warn", "fieldValidation=Ignore", ""}[g.r.Intn(4)]
	case k < 62: // several fields at once
		for n := 2 + g.r.Intn(4); n > 0; n-- {
			setAt(m, ps[g.r.Intn(len(ps))], badValues[g.r.Intn(len(badValues))], false)
		}
		what = "several fields set"
	case k < 66: // deep nesting
		keepNodeSpec()
		b, _ := json.Marshal(m)
		inner := nested("[", "]", 10000, "")
		if g.r.Intn(2) == 0 {
			inner = nested(`{"a":`, "}", 10000, "1")
		}
		body = bytes.Replace(b, []byte(`"metadata":{`), []byte(`"x":`+inner+`,"metadata":{`), 1)
		return body, contentType, "10000 levels of nesting", "", []string{"", "fieldValidation=Strict"}[g.r.Intn(2)]
	case k < 70: // invalid UTF-8 in a string
		p := ps[g.r.Intn(len(ps))]
		setAt(m, p, "@@BAD@@", false)
		keepNodeSpec()
		b, _ := json.Marshal(m)
		return bytes.Replace(b, []byte("@@BAD@@"), []byte("\xff\xfe\xc0\xaf"), 1), contentType, "invalid UTF-8 at " + p, "", ""
	case k < 74: // duplicate keys
		keepNodeSpec()
		b, _ := json.Marshal(m)
		body = bytes.Replace(b, []byte(`"metadata":{`), []byte(`"metadata":{"name":"dup","labels":{"a":"1","a":"2"},`), 1)
		body = append([]byte(`{"kind":"`+t.kind+`",`), body[1:]...)
		return body, contentType, "duplicate keys", "", []string{"", "fieldValidation=Strict"}[g.r.Intn(2)]
	case k < 80: // truncated JSON
		keepNodeSpec()
		b, _ := json.Marshal(m)
		return b[:g.r.Intn(len(b))], contentType, "truncated JSON", "", ""
	case k < 85: // YAML, maybe truncated
		keepNodeSpec()
		b, _ := yaml.Marshal(m)
		if g.r.Intn(2) == 0 {
			b = b[:g.r.Intn(len(b))]
			what = "truncated YAML"
		} else {
			b = append(b, []byte("\n  bad: [indent\n\t- tab")...)
			what = "broken YAML"
		}
		return b, "application/yaml", what, "", ""
	case k < 92: // protobuf, truncated or with flipped bytes
		keepNodeSpec()
		b := g.protobuf(t, m)
		if len(b) == 0 {
			return []byte("k8s\x00"), "application/vnd.kubernetes.protobuf", "empty protobuf", "", ""
		}
		if g.r.Intn(2) == 0 || t.resource == "nodes" {
			return b[:g.r.Intn(len(b))], "application/vnd.kubernetes.protobuf", "truncated protobuf", "", ""
		}
		for n := 1 + g.r.Intn(4); n > 0; n-- {
			i := 4 + g.r.Intn(len(b)-4)
			b[i] = byte(g.r.Intn(256))
		}
		return b, "application/vnd.kubernetes.protobuf", "protobuf with changed bytes", "", ""
	case k < 94 && g.big > 0: // a 1 MiB string at a label value or the name (a few: they are slow)
		g.big--
		if g.r.Intn(2) == 0 {
			setAt(m, "metadata.labels", map[string]any{"big": strings.Repeat("v", 1<<20)}, false)
			what, setPath = "1 MiB label value", "metadata.labels"
		} else {
			setAt(m, "metadata.name", strings.Repeat("n", 1<<20), false)
			what, setPath = "1 MiB name", "metadata.name"
		}
	default: // a whole value of the wrong type
		keys := []string{"metadata", "spec", "status", "data", "apiVersion", "kind"}
		key := keys[g.r.Intn(len(keys))]
		m[key] = badValues[g.r.Intn(len(badValues))]
		what, setPath = "top-level "+key+" replaced", key
		if key == "apiVersion" || key == "kind" {
			setPath = ""
		}
	}
	keepNodeSpec()
	if t.resource == "nodes" && strings.HasPrefix(setPath, "spec") {
		setPath = ""
	}
	b, err := json.Marshal(m)
	if err != nil {
		return []byte("{"), contentType, what + " (unencodable)", "", query
	}
	return b, contentType, what, setPath, query
}

// protobuf encodes m as its typed object in the protobuf envelope; nil when m is no longer
// a valid object.
func (g *badGen) protobuf(t *badTarget, m map[string]any) []byte {
	b, _ := json.Marshal(m)
	o, _, err := scheme.Codecs.UniversalDeserializer().Decode(b, nil, nil)
	if err != nil {
		return nil
	}
	var buf bytes.Buffer
	if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(o, &buf); err != nil {
		return nil
	}
	return buf.Bytes()
}

// jsonPatch is a JSON patch of a few operations, some of them meaningless.
func (g *badGen) jsonPatch(t *badTarget, o map[string]any) []byte {
	var all, ps []string
	paths("", o, &all)
	sort.Strings(all)
	for _, p := range all {
		// A node's spec stays as it is (see mutate).
		if t.resource != "nodes" || !strings.HasPrefix(p, "spec") {
			ps = append(ps, p)
		}
	}
	var ops []any
	for n := 1 + g.r.Intn(3); n > 0; n-- {
		p := "/" + strings.NewReplacer(".", "/", "[", "/", "]", "").Replace(ps[g.r.Intn(len(ps))])
		switch g.r.Intn(6) {
		case 0:
			p += "/99"
		case 1:
			if t.resource == "nodes" {
				break
			}
			p = []string{"", "/", "/~2", "/metadata/labels/a~1b", "/spec/containers/-", "/spec/containers/-1"}[g.r.Intn(6)]
		}
		op := map[string]any{"op": []string{"add", "replace", "remove", "test", "move", "copy", "frob"}[g.r.Intn(7)], "path": p,
			"value": badValues[g.r.Intn(len(badValues))]}
		if op["op"] == "move" || op["op"] == "copy" {
			op["from"] = "/metadata/labels"
		}
		ops = append(ops, op)
	}
	b, _ := json.Marshal(ops)
	if g.r.Intn(8) == 0 {
		b = b[:g.r.Intn(len(b))]
	}
	return b
}

// next is one request against t: a create, an update of the base object (or of its status),
// or a patch of each kind.
func (g *badGen) next(t *badTarget) badRequest {
	name := g.name(t)
	base := g.baseName(t)
	body, ct, what, setPath, query := g.mutate(t, t.base(name))
	req := badRequest{target: t, method: http.MethodPost, path: t.collection, contentType: ct, body: body, what: what, setPath: setPath, create: true}
	verbs := []string{"create", "create", "update", "merge", "strategic", "json", "apply"}
	if t.status {
		verbs = append(verbs, "status-update", "status-merge")
	}
	verb := verbs[g.r.Intn(len(verbs))]
	if verb != "create" {
		req.create = false
		req.path = g.itemPath(t, base)
		// The body names the base object, unless the mutation changed the name.
		src := t.base(base)
		if (verb == "update" || verb == "status-update") && g.stored[t.resource] != nil {
			src = g.stored[t.resource]
		}
		body, ct, what, setPath, query = g.mutate(t, src)
		req.body, req.contentType, req.what, req.setPath = body, ct, what, setPath
		if strings.HasPrefix(verb, "status-") {
			req.path += "/status"
		}
	}
	switch verb {
	case "update", "status-update":
		req.method = http.MethodPut
	case "merge", "status-merge", "strategic", "apply":
		req.method = http.MethodPatch
		if strings.HasPrefix(req.contentType, "application/vnd") {
			req.body, req.what = req.body[min(4, len(req.body)):], req.what+" (protobuf patch)"
		}
		req.contentType = map[string]string{"merge": "application/merge-patch+json", "status-merge": "application/merge-patch+json",
			"strategic": "application/strategic-merge-patch+json", "apply": "application/apply-patch+yaml"}[verb]
		if verb == "apply" {
			query = strings.TrimPrefix(query+"&fieldManager=badinput&force=true", "&")
		}
	case "json":
		req.method = http.MethodPatch
		req.contentType = "application/json-patch+json"
		req.body, req.what, req.setPath = g.jsonPatch(t, t.base(base)), "JSON patch", ""
	}
	req.what = verb + " " + t.resource + ": " + req.what
	if query != "" {
		req.path += "?" + query
	}
	return req
}

// badOutcome is what one request got.
type badOutcome struct {
	req    badRequest
	code   int
	status metav1.Status
	body   string
	err    error
}

func sendBad(ctx context.Context, hc *http.Client, host string, req badRequest) badOutcome {
	out := badOutcome{req: req}
	hr, err := http.NewRequestWithContext(ctx, req.method, host+req.path, bytes.NewReader(req.body))
	if err != nil {
		out.err = err
		return out
	}
	hr.Header.Set("Content-Type", req.contentType)
	hr.Header.Set("Accept", "application/json")
	resp, err := hc.Do(hr)
	if err != nil {
		out.err = err
		return out
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	out.code, out.body = resp.StatusCode, string(b)
	_ = json.Unmarshal(b, &out.status)
	return out
}

// normalField turns "spec.containers[0].resources.requests[cpu]" into its segments, in lower
// case: Kubernetes names a few fields in Go's case ("status.Phase" of a namespace).
func normalField(f string) []string {
	f = strings.ToLower(strings.NewReplacer("[", ".", "]", "").Replace(f))
	return strings.FieldsFunc(f, func(r rune) bool { return r == '.' })
}

// nearField reports whether a field error at cause is about the field set at set: one is
// within the other, or they share their first two segments (a limit set too low is reported
// at the request beside it).
func nearField(set, cause string) bool {
	a, b := normalField(set), normalField(cause)
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n == len(a) || n == len(b) || n >= 2
}

var panicLine = regexp.MustCompile(`(?i)observed a panic|recovered from a panic|panic'd|^panic:|goroutine \d+ \[running\]`)

// TestBadInput sends a few thousand mutated manifests (wrong types, nulls, huge and negative
// numbers, deep nesting, 1 MiB strings, invalid UTF-8, duplicate keys, unknown fields with
// fieldValidation=Strict, bodies over the 3 MiB limit, truncated JSON, YAML and protobuf) to
// create, update, status and every kind of patch of pods, nodes, config maps, secrets,
// namespaces, leases and both kinds of events, through raw HTTP with the admin certificate and
// through client-go. No answer may be a 5xx, berth must log no panic, a 422 names the field,
// representative errors read as Kubernetes' do, and what is stored afterwards is only what was
// created, each object valid.
func TestBadInput(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	ns := c.newNamespace(t)
	logStart := c.proc.output.Len()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	cfg.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	cfg.Timeout = 30 * time.Second
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: rt, Timeout: time.Minute}
	client := kubernetes.NewForConfigOrDie(cfg)

	run := "badinput-" + strings.TrimPrefix(ns, "e2e-")
	if len(run) > 40 {
		run = run[:40]
	}
	targets := badTargets(ns)
	var mu sync.Mutex
	created := map[string]map[string]bool{} // resource → names created
	counts := map[int]int{}
	fivexxTexts := map[string]int{} // the start of each 5xx message, counted
	var failures []string
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(failures) < 40 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
	}
	record := func(o badOutcome) {
		mu.Lock()
		counts[o.code]++
		if o.req.create && o.code >= 200 && o.code < 300 {
			var m metav1.PartialObjectMetadata
			if json.Unmarshal([]byte(o.body), &m) == nil && m.Name != "" {
				if created[o.req.target.resource] == nil {
					created[o.req.target.resource] = map[string]bool{}
				}
				created[o.req.target.resource][m.Name] = true
			}
		}
		mu.Unlock()
		switch {
		case o.err != nil:
			fail("%s %s (%s): %v", o.req.method, o.req.path, o.req.what, o.err)
		case o.code >= 500:
			mu.Lock()
			fivexxTexts[fmt.Sprintf("%d %.50s", o.code, o.status.Message)]++
			mu.Unlock()
			fail("%s %s (%s) got %d: %.400s\nbody sent: %.300q", o.req.method, o.req.path, o.req.what, o.code, o.body, o.req.body)
		case o.code == http.StatusUnprocessableEntity:
			checkFieldErrors(o, fail)
		}
	}
	cleanup := func() {
		dctx, dcancel := context.WithTimeout(context.Background(), time.Minute)
		defer dcancel()
		zero := int64(0)
		for name := range created["nodes"] {
			_ = client.CoreV1().Nodes().Delete(dctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		}
		_ = client.CoreV1().Nodes().Delete(dctx, run+"-base", metav1.DeleteOptions{})
		for name := range created["namespaces"] {
			_ = client.CoreV1().Namespaces().Delete(dctx, name, metav1.DeleteOptions{})
		}
		_ = client.CoreV1().Namespaces().Delete(dctx, run+"-base", metav1.DeleteOptions{})
	}
	defer cleanup()

	// The base objects that updates and patches change.
	gen := &badGen{r: rand.New(rand.NewSource(20261201)), run: run, targets: targets, stored: map[string]map[string]any{}, big: 24}
	for i := range targets {
		tg := &targets[i]
		b, _ := json.Marshal(tg.base(gen.baseName(tg)))
		o := sendBad(ctx, hc, c.url(), badRequest{target: tg, method: http.MethodPost, path: tg.collection, contentType: "application/json", body: b})
		if o.code != http.StatusCreated {
			t.Fatalf("creating the base %s: %d %v %s", tg.resource, o.code, o.err, o.body)
		}
		var stored map[string]any
		d := json.NewDecoder(strings.NewReader(o.body))
		d.UseNumber()
		if err := d.Decode(&stored); err != nil {
			t.Fatalf("the created base %s: %v", tg.resource, err)
		}
		md := stored["metadata"].(map[string]any)
		for _, k := range []string{"resourceVersion", "uid", "creationTimestamp", "managedFields"} {
			delete(md, k)
		}
		gen.stored[tg.resource] = stored
	}

	// The representative errors, with Kubernetes' texts.
	checkKnownErrors(t, ctx, hc, c.url(), targets, gen, ns)

	// The mutations: the same seed sends the same requests every run.
	const total = 3000
	reqs := make(chan badRequest)
	var wg sync.WaitGroup
	start := time.Now()
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for req := range reqs {
				record(sendBad(ctx, hc, c.url(), req))
			}
		}()
	}
	sent := 0
	for i := 0; i < total && ctx.Err() == nil; i++ {
		tg := &targets[gen.r.Intn(len(targets))]
		reqs <- gen.next(tg)
		sent++
		// Bodies over the API server's 3 MiB limit, now and then.
		if i%300 == 0 {
			big := tg.base(gen.name(tg))
			big["metadata"].(map[string]any)["annotations"] = map[string]any{"big": strings.Repeat("a", 3<<20+1024)}
			b, _ := json.Marshal(big)
			reqs <- badRequest{target: tg, method: http.MethodPost, path: tg.collection, contentType: "application/json", body: b, what: "create " + tg.resource + ": body over 3 MiB", create: true}
			sent++
		}
	}
	close(reqs)
	wg.Wait()
	elapsed := time.Since(start)

	// client-go: typed objects with bad values, protobuf on the wire, and patches.
	rawSent := sent
	sent += badInputClientGo(t, ctx, client, ns, record, func(resource, name string) {
		mu.Lock()
		defer mu.Unlock()
		if created[resource] == nil {
			created[resource] = map[string]bool{}
		}
		created[resource][name] = true
	})

	codes := make([]int, 0, len(counts))
	for code := range counts {
		codes = append(codes, code)
	}
	sort.Ints(codes)
	var summary []string
	fivexx := 0
	for _, code := range codes {
		summary = append(summary, fmt.Sprintf("%d×%d", code, counts[code]))
		if code >= 500 {
			fivexx += counts[code]
		}
	}
	line := fmt.Sprintf("TestBadInput: %d requests sent (%d raw HTTP in %s, %d through client-go), status codes: %s, %d >= 500",
		sent, rawSent, elapsed.Round(time.Millisecond), sent-rawSent, strings.Join(summary, " "), fivexx)
	t.Log(line)
	fmt.Println(line)
	for text, n := range fivexxTexts {
		t.Errorf("%d answers began %q", n, text)
	}
	for _, f := range failures {
		t.Error(f)
	}

	checkStoredObjects(t, ctx, hc, c.url(), client, targets, gen, created)

	lines := strings.Split(c.proc.output.since(logStart), "\n")
	for i := 0; i < len(lines); i++ {
		if panicLine.MatchString(lines[i]) {
			// The whole report: the value and the stack that follow.
			end := min(i+120, len(lines))
			t.Errorf("berth logged a panic:\n%s", strings.Join(lines[i:end], "\n"))
			i = end
		}
	}
}

// checkFieldErrors holds a 422 to Kubernetes' form: causes that name their fields, and for
// a single field set to a bad value, an error at or next to it.
func checkFieldErrors(o badOutcome, fail func(string, ...any)) {
	st := o.status
	// A JSON patch that does not apply is a 422 without fields in Kubernetes too (the
	// patch handler's "the server rejected our request due to an error in our request").
	if !strings.Contains(st.Message, " is invalid: ") {
		return
	}
	if st.Reason != metav1.StatusReasonInvalid || st.Details == nil || len(st.Details.Causes) == 0 {
		fail("%s %s (%s): a 422 without field causes: %.400s", o.req.method, o.req.path, o.req.what, o.body)
		return
	}
	setPath := o.req.setPath
	if o.req.target != nil && o.req.target.resource == "events.events.k8s.io" {
		// events.k8s.io Events are validated as the core Events they are stored as, under
		// the core names, as Kubernetes does.
		parts := strings.SplitN(setPath, ".", 2)
		if core, ok := map[string]string{"regarding": "involvedObject", "note": "message", "deprecatedSource": "source",
			"deprecatedFirstTimestamp": "firstTimestamp", "deprecatedLastTimestamp": "lastTimestamp", "deprecatedCount": "count"}[parts[0]]; ok {
			parts[0] = core
			setPath = strings.Join(parts, ".")
		}
	}
	near := setPath == ""
	for _, cause := range st.Details.Causes {
		// A pod's spec changed elsewhere than the field set (the body differs from the
		// stored pod): the one error about the whole spec.
		if cause.Field == "spec" && strings.Contains(cause.Message, "pod updates may not change fields other than") {
			near = true
		}
		// The size of all data together is upstream's one error about the whole object.
		if cause.Field == "" && !strings.Contains(cause.Message, "Too long: may not be more than") {
			fail("%s %s (%s): a field error without its field: %+v", o.req.method, o.req.path, o.req.what, cause)
		}
		// A merge or strategic patch whose result does not decode is reported at "patch".
		near = near || nearField(setPath, cause.Field) || cause.Field == "patch"
	}
	if !near {
		fail("%s %s (%s): the 422 names no field at or near %s: %.600s", o.req.method, o.req.path, o.req.what, o.req.setPath, st.Message)
	}
}

// checkKnownErrors sends one request per representative bad input and compares the answer
// with what kube-apiserver v1.37 answers (texts from its validation and decoding code).
func checkKnownErrors(t *testing.T, ctx context.Context, hc *http.Client, host string, targets []badTarget, gen *badGen, ns string) {
	t.Helper()
	byRes := map[string]*badTarget{}
	for i := range targets {
		byRes[targets[i].resource] = &targets[i]
	}
	pod := func(name string, edit func(m map[string]any)) []byte {
		m := byRes["pods"].base(name)
		edit(m)
		b, _ := json.Marshal(m)
		return b
	}
	spec := func(m map[string]any) map[string]any { return m["spec"].(map[string]any) }
	cm := func(name string, data map[string]any) []byte {
		b, _ := json.Marshal(obj("v1", "ConfigMap", name, map[string]any{"data": data}))
		return b
	}
	podsURL := "/api/v1/namespaces/" + ns + "/pods"
	for _, tc := range []struct {
		name, method, path, contentType string
		body                            []byte
		code                            int
		want                            []string
		causeField                      string
	}{{
		name: "negative activeDeadlineSeconds", method: http.MethodPost, path: podsURL,
		body: pod("k1", func(m map[string]any) { spec(m)["activeDeadlineSeconds"] = -5 }),
		code: 422, causeField: "spec.activeDeadlineSeconds",
		want: []string{`Pod "k1" is invalid: spec.activeDeadlineSeconds: Invalid value: -5: must be between 1 and 2147483647, inclusive`},
	}, {
		name: "unknown field, strict", method: http.MethodPost, path: podsURL + "?fieldValidation=Strict",
		body: pod("k2", func(m map[string]any) { spec(m)["foo"] = "bar" }),
		code: 400, want: []string{`Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field "spec.foo"`},
	}, {
		name: "duplicate field, strict", method: http.MethodPost, path: podsURL + "?fieldValidation=Strict",
		body: bytes.Replace(pod("k3", func(map[string]any) {}), []byte(`"metadata":{`), []byte(`"metadata":{"name":"k3",`), 1),
		code: 400, want: []string{`Pod in version "v1" cannot be handled as a Pod: strict decoding error: duplicate field "metadata.name"`},
	}, {
		name: "wrong type", method: http.MethodPost, path: podsURL,
		body: pod("k4", func(m map[string]any) { spec(m)["containers"] = "c" }),
		code: 400, want: []string{`Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal string into Go struct field PodSpec.spec.containers of type []v1.Container`},
	}, {
		name: "label value too long", method: http.MethodPost, path: podsURL,
		body: pod("k5", func(m map[string]any) {
			m["metadata"].(map[string]any)["labels"] = map[string]any{"app": strings.Repeat("v", 64)}
		}),
		code: 422, causeField: "metadata.labels",
		want: []string{`metadata.labels: Invalid value: "` + strings.Repeat("v", 64) + `": must be no more than 63 bytes`},
	}, {
		name: "negative containerPort", method: http.MethodPost, path: podsURL,
		body: pod("k6", func(m map[string]any) {
			spec(m)["containers"].([]any)[0].(map[string]any)["ports"] = []any{map[string]any{"containerPort": -1}}
		}),
		code: 422, causeField: "spec.containers[0].ports[0].containerPort",
		want: []string{`spec.containers[0].ports[0].containerPort: Invalid value: -1: must be between 1 and 65535, inclusive`},
	}, {
		name: "number too big for int64", method: http.MethodPost, path: podsURL,
		body: bytes.Replace(pod("k7", func(map[string]any) {}), []byte(`"activeDeadlineSeconds":600`), []byte(`"activeDeadlineSeconds":9223372036854775808`), 1),
		code: 400, want: []string{`cannot be handled as a Pod`, `activeDeadlineSeconds`},
	}, {
		name: "negative lease duration", method: http.MethodPost, path: byRes["leases"].collection,
		body: []byte(`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"k8"},"spec":{"leaseDurationSeconds":-1}}`),
		code: 422, causeField: "spec.leaseDurationSeconds",
		want: []string{`Lease.coordination.k8s.io "k8" is invalid: spec.leaseDurationSeconds: Invalid value: -1: must be greater than 0`},
	}, {
		name: "config map key", method: http.MethodPost, path: byRes["configmaps"].collection,
		body: cm("k9", map[string]any{"a b": "x"}), code: 422, causeField: "data[a b]",
		want: []string{`ConfigMap "k9" is invalid: data[a b]: Invalid value: "a b": a valid config key must consist of alphanumeric characters, '-', '_' or '.'`},
	}, {
		name: "config map over 1 MiB", method: http.MethodPost, path: byRes["configmaps"].collection,
		body: cm("k10", map[string]any{"a": strings.Repeat("x", 1<<20), "b": "x"}), code: 422,
		want: []string{`ConfigMap "k10" is invalid: []: Too long: may not be more than 1048576 bytes`},
	}, {
		name: "body over 3 MiB", method: http.MethodPost, path: byRes["configmaps"].collection,
		body: cm("k11", map[string]any{"a": strings.Repeat("x", 3<<20+1)}), code: 413,
		want: []string{`Request entity too large: limit is 3145728`},
	}, {
		name: "truncated JSON", method: http.MethodPost, path: podsURL,
		body: pod("k12", func(map[string]any) {})[:100], code: 400,
		want: []string{`the object provided is unrecognized (must be of type Pod): couldn't get version/kind; json parse error: unexpected end of JSON input`},
	}, {
		// The bad inputs that were 500s (and a panic) before berth answered them itself.
		name: "strategic merge key that is an object", method: http.MethodPatch, path: byRes["nodes"].collection + "/" + gen.baseName(byRes["nodes"]) + "/status",
		contentType: "application/strategic-merge-patch+json", body: []byte(`{"status":{"addresses":[{"type":{},"address":"x"}]}}`),
		code: 400, want: []string{`invalid strategic merge patch: status.addresses[0].type: the merge key must be a string, a number or a boolean`},
	}, {
		name: "strategic patch mixing objects and numbers", method: http.MethodPatch, path: podsURL + "/base",
		contentType: "application/strategic-merge-patch+json", body: []byte(`{"spec":{"containers":[{"name":"c","ports":[1]}]}}`),
		code: 400, want: []string{`list element types are not identical`},
	}, {
		name: "apply of a string where a map belongs", method: http.MethodPatch, path: byRes["secrets"].collection + "/base?fieldManager=badinput&force=true",
		contentType: "application/apply-patch+yaml", body: []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"base"},"data":"x"}`),
		code: 400, want: []string{`failed to create typed patch object`, `.data: expected map`},
	}, {
		name: "core event with a 1 MiB name", method: http.MethodPost, path: byRes["events"].collection,
		body: func() []byte {
			m := byRes["events"].base(strings.Repeat("e", 1<<20))
			b, _ := json.Marshal(m)
			return b
		}(),
		code: 413, want: []string{`Request entity too large: `},
	}, {
		name: "node name", method: http.MethodPost, path: byRes["nodes"].collection,
		body: []byte(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"Bad_Node"}}`), code: 422, causeField: "metadata.name",
		want: []string{`Node "Bad_Node" is invalid: metadata.name: Invalid value: "Bad_Node": a lowercase RFC 1123 subdomain must consist of`},
	}} {
		ct := tc.contentType
		if ct == "" {
			ct = "application/json"
		}
		o := sendBad(ctx, hc, host, badRequest{method: tc.method, path: tc.path, contentType: ct, body: tc.body})
		if o.err != nil || o.code != tc.code {
			t.Errorf("%s: got %d %v %.500s, want %d", tc.name, o.code, o.err, o.body, tc.code)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(o.status.Message, w) {
				t.Errorf("%s: message %.600q does not contain %q", tc.name, o.status.Message, w)
			}
		}
		if tc.causeField != "" {
			found := false
			for _, cause := range o.status.Details.Causes {
				found = found || cause.Field == tc.causeField
			}
			if !found {
				t.Errorf("%s: causes %+v do not name %s", tc.name, o.status.Details, tc.causeField)
			}
		}
	}
}

// badInputClientGo writes through client-go's typed clients (protobuf on the wire for the
// core types) with values no manifest should carry, and patches of each type; it returns how
// many requests it sent.
func badInputClientGo(t *testing.T, ctx context.Context, client kubernetes.Interface, ns string, record func(badOutcome), created func(resource, name string)) int {
	t.Helper()
	r := rand.New(rand.NewSource(42))
	n := 0
	note := func(what string, err error) {
		n++
		o := badOutcome{req: badRequest{method: "client-go", path: what, what: what}, code: http.StatusOK}
		if s, ok := err.(interface{ Status() metav1.Status }); ok {
			o.status = s.Status()
			o.code = int(o.status.Code)
		} else if err != nil {
			o.err = err
		}
		record(o)
	}
	long := strings.Repeat("x", 1<<20)
	int64s := []int64{-1, 0, -9223372036854775808, 9223372036854775807, 1 << 40}
	for i := range 200 {
		v := int64s[r.Intn(len(int64s))]
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cg%d", i), Labels: map[string]string{"app": []string{"ok", long[:64], "-bad-"}[r.Intn(3)]}},
			Spec: corev1.PodSpec{ActiveDeadlineSeconds: &v, TerminationGracePeriodSeconds: &v,
				Containers: []corev1.Container{{Name: []string{"c", "", "C", long[:64]}[r.Intn(4)], Image: "busybox"}}}}
		if i%50 == 0 {
			pod.Name = long
		}
		_, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		if err == nil {
			created("pods", pod.Name)
		}
		note("client-go create pod", err)

		lv := int32(v)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cg%d", i)}, Data: map[string]string{"k": fmt.Sprint(lv)}}
		if i%3 == 0 {
			cm.Data = map[string]string{"bad key": "x", "..": "y"}
		}
		_, err = client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
		if err == nil {
			created("configmaps", cm.Name)
		}
		note("client-go create configmap", err)

		patches := []struct {
			pt   types.PatchType
			body string
		}{
			{types.MergePatchType, fmt.Sprintf(`{"spec":{"activeDeadlineSeconds":%d}}`, v)},
			{types.StrategicMergePatchType, `{"spec":{"containers":[{"name":"c","image":null}]}}`},
			{types.StrategicMergePatchType, `{"spec":{"$setElementOrder/containers":[{"name":"x"}],"containers":[{"$patch":"delete","name":"c"}]}}`},
			{types.JSONPatchType, `[{"op":"replace","path":"/spec/containers/0/resources/limits","value":{"cpu":"-1"}}]`},
			{types.JSONPatchType, `[{"op":"move","from":"/spec","path":"/spec/containers"}]`},
			{types.ApplyPatchType, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"base"},"spec":{"containers":[{"name":"c","ports":[{"containerPort":-1}]}]}}`},
		}
		p := patches[r.Intn(len(patches))]
		opts := metav1.PatchOptions{}
		if p.pt == types.ApplyPatchType {
			opts.FieldManager, opts.Force = "badinput", ptrTo(true)
		}
		sub := []string{}
		if r.Intn(2) == 0 {
			sub = []string{"status"}
		}
		_, err = client.CoreV1().Pods(ns).Patch(ctx, "base", p.pt, []byte(p.body), opts, sub...)
		note("client-go patch pod "+string(p.pt), err)

		raw := client.CoreV1().RESTClient().Post().Namespace(ns).Resource("secrets").
			SetHeader("Content-Type", "application/vnd.kubernetes.protobuf").Body(protoGarbage(r)).Do(ctx)
		if err = raw.Error(); err == nil {
			created("secrets", "pg")
		}
		note("client-go protobuf garbage", err)
	}
	return n
}

func ptrTo[T any](v T) *T { return &v }

// protoGarbage is the protobuf envelope around bytes that are almost a Secret.
func protoGarbage(r *rand.Rand) []byte {
	s := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: metav1.ObjectMeta{Name: "pg"}, Data: map[string][]byte{"k": {1, 2}}}
	var buf bytes.Buffer
	_ = protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(s, &buf)
	b := buf.Bytes()
	if r.Intn(2) == 0 {
		return b[:4+r.Intn(len(b)-4)]
	}
	b[4+r.Intn(len(b)-4)] ^= byte(1 + r.Intn(255))
	return b
}

// checkStoredObjects: every object of the test's namespace (and each node and namespace of
// the run) is a base object or one whose create succeeded, and each is still valid: a dry-run
// create of it under a new name succeeds.
func checkStoredObjects(t *testing.T, ctx context.Context, hc *http.Client, host string, client kubernetes.Interface, targets []badTarget, gen *badGen, created map[string]map[string]bool) {
	t.Helper()
	for i := range targets {
		tg := &targets[i]
		o := sendBad(ctx, hc, host, badRequest{method: http.MethodGet, path: tg.collection})
		if o.code != http.StatusOK {
			t.Errorf("listing %s: %d %v %.300s", tg.resource, o.code, o.err, o.body)
			continue
		}
		var list struct {
			Items []map[string]any `json:"items"`
		}
		d := json.NewDecoder(strings.NewReader(o.body))
		d.UseNumber()
		if err := d.Decode(&list); err != nil {
			t.Errorf("listing %s: %v", tg.resource, err)
			continue
		}
		for _, item := range list.Items {
			md, _ := item["metadata"].(map[string]any)
			name, _ := md["name"].(string)
			if tg.cluster && !strings.HasPrefix(name, gen.run) {
				continue // not this run's
			}
			switch {
			case name == gen.baseName(tg) || created[tg.resource][name]:
			case (tg.resource == "events" || tg.resource == "events.events.k8s.io") && (name == "base" || name == "base-events"):
			case tg.resource == "events" || tg.resource == "events.events.k8s.io":
				// Both event APIs list the same stored events, and the scheduler adds its own.
				if created["events"][name] || created["events.events.k8s.io"][name] {
					break
				}
				src, _ := item["source"].(map[string]any)
				if item["reportingComponent"] == "example.com/badinput" || item["reportingController"] == "example.com/badinput" || (src != nil && src["component"] == "badinput") {
					t.Errorf("%s %q is stored, but no create of it succeeded", tg.resource, name)
				}
			case tg.resource == "configmaps" && name == "kube-root-ca.crt":
			default:
				t.Errorf("%s %q is stored, but no create of it succeeded", tg.resource, name)
			}
			if tg.resource == "events.events.k8s.io" {
				continue // the same objects as the core events, checked there
			}
			// Still valid: the same object created anew (dry run) passes validation.
			for _, k := range []string{"resourceVersion", "uid", "creationTimestamp", "managedFields", "generation", "deletionTimestamp", "deletionGracePeriodSeconds", "finalizers", "ownerReferences"} {
				delete(md, k)
			}
			if tg.cluster {
				md["name"] = name + "-v"
			} else {
				md["name"] = "v-" + name
			}
			if len(md["name"].(string)) > 253 {
				continue
			}
			delete(item, "status")
			if tg.resource == "pods" {
				spec := item["spec"].(map[string]any)
				delete(spec, "nodeName")
			}
			item["apiVersion"], item["kind"] = tg.apiVersion, tg.kind
			b, _ := json.Marshal(item)
			v := sendBad(ctx, hc, host, badRequest{method: http.MethodPost, path: tg.collection + "?dryRun=All", contentType: "application/json", body: b})
			if v.code != http.StatusCreated {
				t.Errorf("stored %s %q no longer passes validation: %d %v %.500s", tg.resource, name, v.code, v.err, v.body)
			}
		}
	}
}
