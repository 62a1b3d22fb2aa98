package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestNodeVolumes: configMap, secret, downwardAPI and projected volumes mount with the right
// contents and modes, read-only; a ConfigMap's change reaches its file; a secret is on tmpfs;
// a missing ConfigMap holds the container back with a message naming it.
func TestNodeVolumes(t *testing.T) {
	t.Parallel()
	c, _ := nodeCluster(t)
	ns := c.newNamespace(t)
	image := busyboxImage(t)
	c.mustIn(t, fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {greeting: hello, size: large}
---
apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {password: s3cr3t}
---
apiVersion: v1
kind: Pod
metadata:
  name: vols
  labels: {app: vols}
  annotations: {note: hi}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: %s
    command: ["sleep", "3600"]
    resources: {limits: {cpu: 250m, memory: 64Mi}}
    volumeMounts:
    - {name: cfg, mountPath: /etc/cfg}
    - {name: picked, mountPath: /etc/picked}
    - {name: secret, mountPath: /etc/secret}
    - {name: info, mountPath: /etc/info}
    - {name: all, mountPath: /etc/all}
    - {name: cfg, mountPath: /etc/greeting, subPath: greeting}
  volumes:
  - name: cfg
    configMap: {name: cfg}
  - name: picked
    configMap: {name: cfg, defaultMode: 0600, items: [{key: size, path: dir/size.txt}, {key: greeting, path: hello.txt, mode: 0440}]}
  - name: secret
    secret: {secretName: creds, defaultMode: 0400}
  - name: info
    downwardAPI:
      items:
      - {path: name, fieldRef: {fieldPath: metadata.name}}
      - {path: labels, fieldRef: {fieldPath: metadata.labels}}
      - {path: note, fieldRef: {fieldPath: "metadata.annotations['note']"}}
      - {path: cpu, resourceFieldRef: {containerName: c, resource: limits.cpu, divisor: 1m}}
  - name: all
    projected:
      sources:
      - configMap: {name: cfg, items: [{key: greeting, path: greeting}]}
      - secret: {name: creds}
      - downwardAPI: {items: [{path: ns, fieldRef: {fieldPath: metadata.namespace}}]}
`, image), "apply", "-n", ns, "-f", "-")
	c.waitPhase(t, ns, "vols", "Running")
	sh := func(script string) string {
		t.Helper()
		return c.must(t, "exec", "vols", "-n", ns, "--", "sh", "-c", script)
	}
	want := map[string]string{
		"cat /etc/cfg/greeting /etc/cfg/size":                                        "hellolarge",
		"cat /etc/picked/dir/size.txt /etc/picked/hello.txt":                         "largehello",
		"stat -L -c %a /etc/picked/dir/size.txt /etc/picked/hello.txt /etc/cfg/size": "600\n440\n644\n",
		"ls /etc/picked":                                      "dir\nhello.txt\n",
		"cat /etc/secret/password":                            "s3cr3t",
		"stat -L -c %a /etc/secret/password":                  "400\n",
		"cat /etc/info/name":                                  "vols",
		"cat /etc/info/labels":                                `app="vols"`,
		"cat /etc/info/note":                                  "hi",
		"cat /etc/info/cpu":                                   "250",
		"cat /etc/all/greeting /etc/all/password /etc/all/ns": "hellos3cr3t" + ns,
		"cat /etc/greeting":                                   "hello",
		"touch /etc/cfg/x 2>/dev/null && echo writable || echo read-only": "read-only\n",
	}
	for script, w := range want {
		if got := sh(script); got != w {
			t.Errorf("%s: %q, want %q", script, got, w)
		}
	}
	if got := sh("grep ' /etc/secret ' /proc/mounts"); !strings.Contains(got, " tmpfs ") {
		t.Errorf("the secret volume is not on tmpfs: %q", got)
	}
	if got := sh("grep ' /etc/cfg ' /proc/mounts"); strings.Contains(got, " tmpfs ") {
		t.Errorf("the configMap volume is on tmpfs: %q", got)
	}

	// A change to the ConfigMap reaches the mounted file (not the subPath one, as upstream).
	c.must(t, "patch", "configmap", "cfg", "-n", ns, "--type=merge", "-p", `{"data":{"greeting":"bonjour"}}`)
	eventually(t, 90*time.Second, "the ConfigMap's change to reach the volume", func() bool {
		if sh("cat /etc/cfg/greeting") == "bonjour" {
			return true
		}
		time.Sleep(time.Second)
		return false
	})
	if got := sh("cat /etc/all/greeting"); got != "bonjour" {
		t.Errorf("the projected volume says %q after the change, want bonjour", got)
	}

	// A missing ConfigMap: the container waits, and says why.
	c.mustIn(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: nocm}
spec:
  containers:
  - name: c
    image: %s
    command: ["sleep", "3600"]
    volumeMounts: [{name: v, mountPath: /etc/v}]
  volumes: [{name: v, configMap: {name: nowhere}}]
`, image), "apply", "-n", ns, "-f", "-")
	c.waitStatusColumn(t, ns, "nocm", "CreateContainerConfigError")
	msg := c.jsonpath(t, ns, "pod/nocm", "{.status.containerStatuses[0].state.waiting.message}")
	if !strings.Contains(msg, `MountVolume.SetUp failed for volume "v" : configmap "nowhere" not found`) {
		t.Errorf("waiting message %q, want it to name the volume and the ConfigMap", msg)
	}
	c.mustIn(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: nowhere}\ndata: {k: v}\n", "apply", "-n", ns, "-f", "-")
	c.waitPhase(t, ns, "nocm", "Running")
}

// TestNodeFSGroup: a pod's fsGroup owns its emptyDir and configMap volumes, a non-root
// container user is in that group and can write the emptyDir, and new files there inherit
// the group (the directory is setgid).
func TestNodeFSGroup(t *testing.T) {
	t.Parallel()
	c, _ := nodeCluster(t)
	ns := c.newNamespace(t)
	c.mustIn(t, fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {greeting: hello}
---
apiVersion: v1
kind: Pod
metadata: {name: grouped}
spec:
  terminationGracePeriodSeconds: 1
  securityContext: {runAsUser: 1000, fsGroup: 2000}
  containers:
  - name: c
    image: %s
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: data, mountPath: /data}
    - {name: cfg, mountPath: /etc/cfg}
  volumes:
  - {name: data, emptyDir: {}}
  - {name: cfg, configMap: {name: cfg}}
`, busyboxImage(t)), "apply", "-n", ns, "-f", "-")
	c.waitPhase(t, ns, "grouped", "Running")
	got := c.must(t, "exec", "grouped", "-n", ns, "--", "sh", "-c",
		"id -u; id -G; touch /data/new && stat -c %g /data /data/new; stat -L -c '%g %a' /etc/cfg/greeting")
	want := "1000\n0 2000\n2000\n2000\n2000 644\n" // no runAsGroup: the primary group is 0
	if got != want {
		t.Errorf("ownership inside the container:\n%s\nwant\n%s", got, want)
	}
}

// TestNodeFSGroupSubPath: a subPath missing from an fsGroup emptyDir is created by the node
// agent with the volume root's mode, the tmpfs root's sticky bit and the setgid bit
// included, owned by root and the pod's group: the container (not root) sees
// dgtrwxrwxrwx 0:123 and can write it, on both media.
func TestNodeFSGroupSubPath(t *testing.T) {
	t.Parallel()
	c, _ := nodeCluster(t)
	ns := c.newNamespace(t)
	for _, tc := range []struct{ name, medium string }{{"tmpfs", "Memory"}, {"disk", ""}} {
		c.mustIn(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: sub-%s}
spec:
  restartPolicy: Never
  securityContext: {runAsUser: 1001, fsGroup: 123}
  containers:
  - name: c
    image: %s
    command: ["sh", "-c", "stat -c '%%A %%u %%g' /test-volume && touch /test-volume/f && stat -c %%g /test-volume/f && grep ' /test-volume ' /proc/mounts | cut -d' ' -f3"]
    volumeMounts:
    - {name: v, mountPath: /test-volume, subPath: test-sub}
  volumes:
  - {name: v, emptyDir: {medium: %q}}
`, tc.name, busyboxImage(t), tc.medium), "apply", "-n", ns, "-f", "-")
	}
	for _, tc := range []struct{ name, want string }{
		{"tmpfs", "drwxrwsrwt 0 123\n123\ntmpfs\n"},
		{"disk", "drwxrwsrwx 0 123\n123\n"},
	} {
		phase := c.waitFor(t, ns, "pod/sub-"+tc.name, "{.status.phase}", "to end", func(v string) bool { return v == "Succeeded" || v == "Failed" })
		got := c.must(t, "logs", "sub-"+tc.name, "-n", ns)
		if phase != "Succeeded" {
			t.Errorf("%s: the container failed; its output:\n%s", tc.name, got)
			continue
		}
		if tc.name == "disk" {
			// The disk medium's mount is the node's filesystem, whatever it is.
			got = strings.Join(strings.SplitAfter(got, "\n")[:2], "")
		}
		if got != tc.want {
			t.Errorf("%s: the subPath inside the container:\n%s\nwant\n%s", tc.name, got, tc.want)
		}
	}
}
