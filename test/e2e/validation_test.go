package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// TestInvalidPods: each invalid manifest is refused with 422 and an error that names the
// field, through kubectl create and server-side apply; nothing is created.
func TestInvalidPods(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	ns := c.newNamespace(t)

	for _, tc := range []struct {
		pod  string
		spec string
		want string // the field error after `The Pod "NAME" is invalid: `
		// ssaWant replaces prefix+want for server-side apply, which may refuse a manifest
		// before validation, as Kubernetes does.
		ssaWant string
	}{{
		pod:  "no-image",
		spec: "  containers:\n  - name: c\n",
		want: `spec.containers[0].image: Required value`,
	}, {
		pod:  "Bad_Name",
		spec: "  containers:\n  - name: c\n    image: busybox\n",
		want: `metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of`,
	}, {
		pod:  "sometimes",
		spec: "  restartPolicy: Sometimes\n  containers:\n  - name: c\n    image: busybox\n",
		want: `spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"`,
	}, {
		pod:  "twins",
		spec: "  containers:\n  - name: c\n    image: busybox\n  - name: c\n    image: busybox\n",
		want: `spec.containers[1].name: Duplicate value: "c"`,
		// The apply configuration cannot be built with two list entries of one key.
		ssaWant: `.spec.containers: duplicate entries for key [name="c"]`,
	}, {
		pod: "greedy",
		spec: "  containers:\n  - name: c\n    image: busybox\n" +
			"    resources:\n      requests:\n        cpu: \"2\"\n      limits:\n        cpu: \"1\"\n",
		want: `spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1`,
	}, {
		pod:  "empty",
		spec: "  containers: []\n",
		want: `spec.containers: Required value`,
	}, {
		pod:  "big-port",
		spec: "  containers:\n  - name: c\n    image: busybox\n    ports:\n    - containerPort: 70000\n",
		want: `spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive`,
	}, {
		pod:  "pull",
		spec: "  containers:\n  - name: c\n    image: busybox\n    imagePullPolicy: Sometimes\n",
		want: `spec.containers[0].imagePullPolicy: Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"`,
	}, {
		pod:  "upper-container",
		spec: "  containers:\n  - name: C_1\n    image: busybox\n",
		want: `spec.containers[0].name: Invalid value: "C_1": a lowercase RFC 1123 label must consist of`,
	}} {
		t.Run(tc.pod, func(t *testing.T) {
			manifest := fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n%s", tc.pod, ns, tc.spec)
			prefix := fmt.Sprintf("The Pod %q is invalid: ", tc.pod)

			// -v=6 shows the response code.
			r := c.kubectlIn(t, manifest, "create", "-f", "-", "-v=6")
			if r.code == 0 {
				t.Fatalf("kubectl create accepted the pod:\n%s", r)
			}
			wantContains(t, r.stderr, prefix, tc.want, " 422 Unprocessable Entity")
			// Client-side apply of a new object is a create too; server-side apply takes
			// another path through the API server.
			r = c.kubectlIn(t, manifest, "apply", "--server-side", "-f", "-")
			switch {
			case r.code == 0:
				t.Errorf("kubectl apply --server-side accepted the pod:\n%s", r)
			case tc.ssaWant != "":
				wantContains(t, r.stderr, tc.ssaWant)
			default:
				wantContains(t, r.stderr, prefix, tc.want)
			}
		})
	}

	// Updates are validated too: a container's image may change but not be emptied, and
	// fields other than the updatable ones may not change at all.
	c.mustIn(t, podManifest(ns, "valid", "busybox:1.36"), "apply", "-f", "-")
	r := c.kubectl(t, "patch", "pod", "valid", "-n", ns, "-p", `{"spec":{"containers":[{"name":"c","image":""}]}}`)
	if r.code == 0 {
		t.Errorf("emptying the image was accepted:\n%s", r)
	}
	wantContains(t, r.stderr, `The Pod "valid" is invalid: spec.containers[0].image: Required value`)
	r = c.kubectl(t, "patch", "pod", "valid", "-n", ns, "-p", `{"spec":{"restartPolicy":"Never"}}`)
	if r.code == 0 {
		t.Errorf("changing restartPolicy was accepted:\n%s", r)
	}
	wantContains(t, r.stderr, `The Pod "valid" is invalid: spec: Forbidden: pod updates may not change fields other than `+
		"`spec.containers[*].image`", `- "restartPolicy": "Always",`, `+ "restartPolicy": "Never",`)

	// Nothing invalid was stored.
	if out := c.must(t, "get", "pods", "-n", ns, "-o", "name"); out != "pod/valid\n" {
		t.Errorf("pods in the namespace: %q, want only pod/valid", out)
	}
	if out := c.must(t, "get", "pod", "valid", "-n", ns, "-o", "jsonpath={.spec.restartPolicy} {.spec.containers[0].image}"); out != "Always busybox:1.36" {
		t.Errorf("after the refused updates: %q", out)
	}
}

// TestInvalidObjects: the other kinds are validated as in Kubernetes too, with the same field
// paths; nothing invalid is stored.
func TestInvalidObjects(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	ns := c.newNamespace(t)

	for _, tc := range []struct {
		kind, name, manifest string
		want                 []string
	}{{
		kind: "ConfigMap", name: "bad-key",
		manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad-key\ndata:\n  bad key: v\n",
		want:     []string{`data[bad key]: Invalid value: "bad key": a valid config key must consist of alphanumeric characters, '-', '_' or '.'`},
	}, {
		kind: "Secret", name: "bare-tls",
		manifest: "apiVersion: v1\nkind: Secret\nmetadata:\n  name: bare-tls\ntype: kubernetes.io/tls\ndata: {}\n",
		want:     []string{`data[tls.crt]: Required value`, `data[tls.key]: Required value`},
	}, {
		kind: "Node", name: "bad-cidr",
		manifest: "apiVersion: v1\nkind: Node\nmetadata:\n  name: bad-cidr\nspec:\n  podCIDR: 10.0.0.0/33\n",
		want:     []string{`spec.podCIDRs[0]: Invalid value: "10.0.0.0/33": must be a valid CIDR value`},
	}, {
		// Kubernetes reports node taints under metadata; kubectl users see that path.
		kind: "Node", name: "bad-taint",
		manifest: "apiVersion: v1\nkind: Node\nmetadata:\n  name: bad-taint\nspec:\n  taints:\n  - key: k\n    effect: Sometimes\n",
		want:     []string{`metadata.taints[0].effect: Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"`},
	}, {
		kind: "Namespace", name: "Bad_NS",
		manifest: "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: Bad_NS\n",
		want:     []string{`metadata.name: Invalid value: "Bad_NS": a lowercase RFC 1123 label must consist of`},
	}, {
		kind: "PriorityClass", name: "too-high",
		manifest: "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: too-high\nvalue: 2000000001\n",
		want:     []string{`value: Forbidden: maximum allowed value of a user defined priority is 1000000000`},
	}} {
		t.Run(tc.kind+"/"+tc.name, func(t *testing.T) {
			r := c.kubectlIn(t, tc.manifest, "create", "-n", ns, "-f", "-")
			if r.code == 0 {
				t.Fatalf("kubectl create accepted it:\n%s", r)
			}
			wantContains(t, r.stderr, append([]string{fmt.Sprintf("The %s %q is invalid: ", tc.kind, tc.name)}, tc.want...)...)
			if r := c.kubectl(t, "get", tc.kind+"/"+tc.name, "-n", ns); r.code == 0 || !strings.Contains(r.stderr, "NotFound") {
				t.Errorf("the invalid object was stored:\n%s", r)
			}
		})
	}

	// An immutable config map refuses changes to its data.
	c.mustIn(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: frozen\nimmutable: true\ndata:\n  a: b\n", "create", "-n", ns, "-f", "-")
	r := c.kubectl(t, "patch", "configmap", "frozen", "-n", ns, "-p", `{"data":{"a":"c"}}`)
	if r.code == 0 {
		t.Errorf("an immutable config map changed:\n%s", r)
	}
	wantContains(t, r.stderr, `The ConfigMap "frozen" is invalid: data: Forbidden: field is immutable when `+"`immutable`"+` is set`)
}
