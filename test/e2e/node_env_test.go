package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// TestNodeEnv: every source of a container's environment resolves as the kubelet resolves
// it, and a missing key holds the container back with CreateContainerConfigError until it
// exists.
func TestNodeEnv(t *testing.T) {
	t.Parallel()
	c, n := nodeCluster(t)
	ns := c.newNamespace(t)
	image := busyboxImage(t)
	c.mustIn(t, `apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {color: blue, size: large}
---
apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {user: admin, token: s3cr3t}
`, "apply", "-n", ns, "-f", "-")
	c.mustIn(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: env
  labels: {app: env}
  annotations: {note: hello}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: %s
    command: ["sh", "-c", "env | sort; sleep 3600"]
    resources:
      requests: {cpu: 250m, memory: 32Mi}
      limits: {cpu: 500m, memory: 64Mi}
    envFrom:
    - configMapRef: {name: settings}
      prefix: CM_
    - secretRef: {name: creds}
    env:
    - {name: COLOR, valueFrom: {configMapKeyRef: {name: settings, key: color}}}
    - {name: PASSWORD, valueFrom: {secretKeyRef: {name: creds, key: token}}}
    - {name: GREETING, value: "$(COLOR)-$(user)"}
    - {name: OPTIONAL, valueFrom: {configMapKeyRef: {name: absent, key: x, optional: true}}}
    - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    - {name: POD_NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
    - {name: POD_UID, valueFrom: {fieldRef: {fieldPath: metadata.uid}}}
    - {name: APP_LABEL, valueFrom: {fieldRef: {fieldPath: "metadata.labels['app']"}}}
    - {name: NOTE, valueFrom: {fieldRef: {fieldPath: "metadata.annotations['note']"}}}
    - {name: NODE_NAME, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
    - {name: SA_NAME, valueFrom: {fieldRef: {fieldPath: spec.serviceAccountName}}}
    - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
    - {name: POD_IPS, valueFrom: {fieldRef: {fieldPath: status.podIPs}}}
    - {name: HOST_IP, valueFrom: {fieldRef: {fieldPath: status.hostIP}}}
    - {name: CPU_LIMIT_M, valueFrom: {resourceFieldRef: {resource: limits.cpu, divisor: 1m}}}
    - {name: MEM_REQUEST_MI, valueFrom: {resourceFieldRef: {resource: requests.memory, divisor: 1Mi}}}
`, image), "apply", "-n", ns, "-f", "-")
	c.waitPhase(t, ns, "env", "Running")
	uid := c.jsonpath(t, ns, "pod/env", "{.metadata.uid}")
	ip := c.jsonpath(t, ns, "pod/env", "{.status.podIP}")
	var logs string
	eventually(t, podTimeout, "the container to print its environment", func() bool {
		logs = c.must(t, "logs", "env", "-n", ns)
		return strings.Contains(logs, "POD_NAME=")
	})
	got := map[string]string{}
	for _, line := range strings.Split(logs, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			got[k] = v
		}
	}
	want := map[string]string{
		"CM_color": "blue", "CM_size": "large", "user": "admin", "token": "s3cr3t",
		"COLOR": "blue", "PASSWORD": "s3cr3t", "GREETING": "blue-admin",
		"POD_NAME": "env", "POD_NAMESPACE": ns, "POD_UID": uid, "APP_LABEL": "env", "NOTE": "hello",
		"NODE_NAME": n.name, "SA_NAME": "default", "POD_IP": ip, "POD_IPS": ip, "HOST_IP": "127.0.0.1",
		"CPU_LIMIT_M": "500", "MEM_REQUEST_MI": "32",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("$%s = %q, want %q", k, got[k], v)
		}
	}
	if _, ok := got["OPTIONAL"]; ok {
		t.Errorf("OPTIONAL is set (%q) though its optional ConfigMap does not exist", got["OPTIONAL"])
	}
	if ip == "" {
		t.Error("the pod has no IP")
	}
	// The kubernetes variables: the kubernetes Service's cluster IP and port, as the kubelet
	// sets them; berth up's service proxy routes them to the API server.
	kubernetesIP := c.jsonpath(t, "default", "svc/kubernetes", "{.spec.clusterIP}")
	if host, port := got["KUBERNETES_SERVICE_HOST"], got["KUBERNETES_SERVICE_PORT"]; host != kubernetesIP || port != "443" {
		t.Errorf("$KUBERNETES_SERVICE_HOST:PORT = %s:%s, want the kubernetes Service's %s:443", host, port, kubernetesIP)
	}

	// A required key that is missing: the container is not created, and the pod says why.
	c.mustIn(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: missing}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: %s
    command: ["sh", "-c", "echo $WANTED; sleep 3600"]
    env:
    - {name: WANTED, valueFrom: {configMapKeyRef: {name: settings, key: shape}}}
`, image), "apply", "-n", ns, "-f", "-")
	c.waitStatusColumn(t, ns, "missing", "CreateContainerConfigError")
	msg := c.jsonpath(t, ns, "pod/missing", "{.status.containerStatuses[0].state.waiting.message}")
	if msg != "couldn't find key shape in ConfigMap "+ns+"/settings" {
		t.Errorf("waiting message %q, want it to name the key and the ConfigMap", msg)
	}
	c.waitEvent(t, ns, "missing", "Failed", "Error: couldn't find key shape in ConfigMap "+ns+"/settings")

	// A missing ConfigMap is named as the kubelet names it.
	c.mustIn(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: nocm}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: %s
    command: ["sleep", "3600"]
    envFrom:
    - configMapRef: {name: nowhere}
`, image), "apply", "-n", ns, "-f", "-")
	c.waitStatusColumn(t, ns, "nocm", "CreateContainerConfigError")
	if msg := c.jsonpath(t, ns, "pod/nocm", "{.status.containerStatuses[0].state.waiting.message}"); msg != `configmap "nowhere" not found` {
		t.Errorf("waiting message %q, want configmap \"nowhere\" not found", msg)
	}

	// Once the key exists the container starts: nothing was lost.
	c.must(t, "patch", "configmap", "settings", "-n", ns, "--type=merge", "-p", `{"data":{"shape":"round"}}`)
	c.waitPhase(t, ns, "missing", "Running")
	eventually(t, podTimeout, "the container to print the key's value", func() bool {
		return c.must(t, "logs", "missing", "-n", ns) == "round\n"
	})
}
