package config

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/node/types"
)

const nginxYAML = `apiVersion: v1
kind: Pod
metadata:
  name: web
  labels:
    app: web
spec:
  containers:
  - name: nginx
    image: nginx:1.27
    ports:
    - containerPort: 80
  - name: side
    image: busybox
`

const nginxJSON = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"kube-system"},
"spec":{"containers":[{"name":"nginx","image":"nginx:latest"}]}}`

func fileDefaulter(node, path string) staticPodDefaulter {
	return staticPodDefaulter{nodeName: node, fromFile: true, source: path}
}

func TestStaticPodDefaults(t *testing.T) {
	parsed, pod, err := fileDefaulter("node-1", "/etc/berth/manifests/web.yaml").decodeSinglePod(klog.Background(), []byte(nginxYAML))
	if !parsed || err != nil {
		t.Fatalf("decode: parsed=%v err=%v", parsed, err)
	}
	if pod.Name != "web-node-1" {
		t.Errorf("name = %q, want web-node-1", pod.Name)
	}
	if pod.Namespace != "default" {
		t.Errorf("namespace = %q, want default", pod.Namespace)
	}
	if pod.Spec.NodeName != "node-1" {
		t.Errorf("nodeName = %q", pod.Spec.NodeName)
	}
	if len(pod.UID) != 32 {
		t.Errorf("UID = %q, want 32 hex digits", pod.UID)
	}
	if got := pod.Annotations[types.ConfigHashAnnotationKey]; got != string(pod.UID) {
		t.Errorf("config.hash = %q, want the UID %q", got, pod.UID)
	}
	if pod.Status.Phase != v1.PodPending {
		t.Errorf("phase = %q, want Pending", pod.Status.Phase)
	}
	want := v1.Toleration{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}
	if len(pod.Spec.Tolerations) != 1 || pod.Spec.Tolerations[0] != want {
		t.Errorf("tolerations = %+v, want only %+v", pod.Spec.Tolerations, want)
	}
	// The API server's defaults.
	if pod.Spec.RestartPolicy != v1.RestartPolicyAlways || pod.Spec.DNSPolicy != v1.DNSClusterFirst ||
		pod.Spec.TerminationGracePeriodSeconds == nil || *pod.Spec.TerminationGracePeriodSeconds != 30 ||
		pod.Spec.SchedulerName != v1.DefaultSchedulerName {
		t.Errorf("API defaults missing: restartPolicy=%q dnsPolicy=%q grace=%v scheduler=%q",
			pod.Spec.RestartPolicy, pod.Spec.DNSPolicy, pod.Spec.TerminationGracePeriodSeconds, pod.Spec.SchedulerName)
	}
	if got := pod.Spec.Containers[0].ImagePullPolicy; got != v1.PullIfNotPresent {
		t.Errorf("tagged image pull policy = %q, want IfNotPresent", got)
	}
	if got := pod.Spec.Containers[1].ImagePullPolicy; got != v1.PullAlways {
		t.Errorf("untagged image pull policy = %q, want Always", got)
	}
	if got := pod.Spec.Containers[0].Ports[0].Protocol; got != v1.ProtocolTCP {
		t.Errorf("port protocol = %q, want TCP", got)
	}

	// JSON, with a namespace of its own, from a URL: no toleration added.
	_, pod, err = staticPodDefaulter{nodeName: "node-1", source: "http://x/pods"}.decodeSinglePod(klog.Background(), []byte(nginxJSON))
	if err != nil {
		t.Fatal(err)
	}
	if pod.Namespace != "kube-system" || len(pod.Spec.Tolerations) != 0 {
		t.Errorf("URL pod: namespace %q tolerations %v", pod.Namespace, pod.Spec.Tolerations)
	}
}

func TestStaticPodUID(t *testing.T) {
	uid := func(d staticPodDefaulter, manifest string) string {
		t.Helper()
		_, pod, err := d.decodeSinglePod(klog.Background(), []byte(manifest))
		if err != nil {
			t.Fatal(err)
		}
		return string(pod.UID)
	}
	base := uid(fileDefaulter("node-1", "/m/web.yaml"), nginxYAML)
	if base != "" && uid(fileDefaulter("node-1", "/m/web.yaml"), nginxYAML) != base {
		t.Error("the same manifest got another UID")
	}
	for name, other := range map[string]string{
		"another node":     uid(fileDefaulter("node-2", "/m/web.yaml"), nginxYAML),
		"another file":     uid(fileDefaulter("node-1", "/m/web2.yaml"), nginxYAML),
		"from a URL":       uid(staticPodDefaulter{nodeName: "node-1", source: "/m/web.yaml"}, nginxYAML),
		"another image":    uid(fileDefaulter("node-1", "/m/web.yaml"), strings.Replace(nginxYAML, "nginx:1.27", "nginx:1.28", 1)),
		"another label":    uid(fileDefaulter("node-1", "/m/web.yaml"), strings.Replace(nginxYAML, "app: web", "app: web2", 1)),
		"same but as JSON": uid(fileDefaulter("node-1", "/m/web.yaml"), `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","labels":{"app":"web"}},"spec":{"containers":[{"name":"nginx","image":"nginx:1.27","ports":[{"containerPort":80}]},{"name":"side","image":"busybox"}]}}`),
	} {
		if name == "same but as JSON" {
			if other != base {
				t.Errorf("%s: UID %s, want %s (the hash is of the pod, not of the text)", name, other, base)
			}
			continue
		}
		if other == base {
			t.Errorf("%s: same UID %s", name, base)
		}
	}
	// A manifest's own UID is kept.
	withUID := strings.Replace(nginxYAML, "name: web\n", "name: web\n  uid: my-uid\n", 1)
	if got := uid(fileDefaulter("node-1", "/m/web.yaml"), withUID); got != "my-uid" {
		t.Errorf("UID = %q, want the manifest's my-uid", got)
	}
}

func TestStaticPodRejected(t *testing.T) {
	tests := []struct {
		name       string
		manifest   string
		wantParsed bool
		wantErr    string
	}{
		{"not YAML", "{{{", false, ""},
		{"not a pod", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n", false, "invalid pod"},
		{"no kind", "metadata:\n  name: x\n", false, "Kind"},
		{"no name", "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: c\n    image: busybox\n", true, "name is needed"},
		{"no containers", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n", true, "invalid pod: "},
		{"bad name", strings.Replace(nginxYAML, "name: web\n", "name: Web_1\n", 1), true, "invalid pod: "},
		{"service account", strings.Replace(nginxYAML, "spec:\n", "spec:\n  serviceAccountName: sa\n", 1), true, "static pods may not reference serviceaccounts"},
		{"secret env", strings.Replace(nginxYAML, "    image: busybox\n", "    image: busybox\n    envFrom:\n    - secretRef:\n        name: s\n", 1), true, "static pods may not reference secrets"},
		{"configmap volume", strings.Replace(nginxYAML, "spec:\n", "spec:\n  volumes:\n  - name: v\n    configMap:\n      name: cm\n", 1), true, "static pods may not reference configmaps"},
		{"pvc", strings.Replace(nginxYAML, "spec:\n", "spec:\n  volumes:\n  - name: v\n    persistentVolumeClaim:\n      claimName: c\n", 1), true, "static pods may not reference persistentvolumeclaims"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parsed, pod, err := fileDefaulter("node-1", "/m/x.yaml").decodeSinglePod(klog.Background(), []byte(tt.manifest))
			if err == nil || pod != nil {
				t.Fatalf("got pod %v, err %v; want an error", pod, err)
			}
			if parsed != tt.wantParsed {
				t.Errorf("parsed = %v, want %v (err %v)", parsed, tt.wantParsed, err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %q, want it to contain %q", err, tt.wantErr)
			}
		})
	}
	// Host path and empty dir volumes are fine.
	ok := strings.Replace(nginxYAML, "spec:\n", "spec:\n  volumes:\n  - name: v\n    hostPath:\n      path: /tmp\n  - name: e\n    emptyDir: {}\n", 1)
	if _, _, err := fileDefaulter("node-1", "/m/x.yaml").decodeSinglePod(klog.Background(), []byte(ok)); err != nil {
		t.Errorf("hostPath and emptyDir volumes: %v", err)
	}
}

func TestStaticPodList(t *testing.T) {
	list := `apiVersion: v1
kind: PodList
items:
- apiVersion: v1
  kind: Pod
  metadata: {name: a}
  spec: {containers: [{name: c, image: busybox}]}
- apiVersion: v1
  kind: Pod
  metadata: {name: b}
  spec: {containers: [{name: c, image: busybox}]}
`
	d := staticPodDefaulter{nodeName: "n", source: "http://x"}
	if parsed, _, _ := d.decodeSinglePod(klog.Background(), []byte(list)); parsed {
		t.Error("a PodList parsed as a Pod")
	}
	parsed, pods, err := d.decodePodList(klog.Background(), []byte(list))
	if !parsed || err != nil || len(pods) != 2 || pods[0].Name != "a-n" || pods[1].Name != "b-n" {
		t.Fatalf("parsed=%v err=%v pods=%v", parsed, err, pods)
	}
	if pods[0].UID == pods[1].UID {
		t.Error("two pods of a list share a UID")
	}
	bad := strings.Replace(list, "metadata: {name: b}", "metadata: {}", 1)
	if parsed, _, err := d.decodePodList(klog.Background(), []byte(bad)); !parsed || err == nil {
		t.Errorf("a list with a bad pod: parsed=%v err=%v, want an error", parsed, err)
	}
}
