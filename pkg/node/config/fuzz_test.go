package config

import (
	"testing"

	"k8s.io/klog/v2"
)

// FuzzStaticPodManifest decodes a static pod manifest as the file source and the URL source
// do (one pod; a pod list from a URL) and prepares it for this node. Nothing may panic, and a
// pod that is accepted has the node's name, the node, a UID and its config hash.
func FuzzStaticPodManifest(f *testing.F) {
	for _, s := range []string{nginxYAML, nginxJSON,
		`apiVersion: v1
kind: PodList
items:
- metadata: {name: a, namespace: kube-system}
  spec: {containers: [{name: c, image: busybox, env: [{name: X, valueFrom: {secretKeyRef: {name: s, key: k}}}]}]}
- metadata: {name: b, uid: fixed}
  spec:
    priorityClassName: system-node-critical
    priority: 2000001000
    containers: [{name: c, image: busybox}]
    volumes: [{name: v, configMap: {name: cm}}]
`,
		"apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: other\n",
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x","annotations":{"kubernetes.io/config.source":"api"}},"spec":{"containers":[{"name":"c","image":"i"}],"tolerations":[{"operator":"Exists","effect":"NoExecute"}]}}`,
		"\t{not yaml: [",
	} {
		f.Add([]byte(s))
	}
	logger := klog.Background()
	f.Fuzz(func(t *testing.T, data []byte) {
		file := staticPodDefaulter{nodeName: "Node-1", fromFile: true, source: "/etc/berth/manifests/web.yaml"}
		if parsed, pod, err := file.decodeSinglePod(logger, data); err == nil {
			if !parsed || pod.Spec.NodeName != "Node-1" || pod.UID == "" || pod.Annotations["kubernetes.io/config.hash"] != string(pod.UID) {
				t.Fatalf("accepted pod %s/%s: parsed=%v nodeName=%q uid=%q annotations=%v", pod.Namespace, pod.Name, parsed, pod.Spec.NodeName, pod.UID, pod.Annotations)
			}
		}
		url := staticPodDefaulter{nodeName: "node-1", source: "http://127.0.0.1/pods"}
		_, _, _ = url.decodeSinglePod(logger, data)
		_, _, _ = url.decodePodList(logger, data)
	})
}
