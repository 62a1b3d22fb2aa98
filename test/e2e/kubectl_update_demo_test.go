package e2e

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/berth-cluster/berth/pkg/cri/testimage"
)

// updateDemoRC is the manifest of kubectl's "Update Demo" conformance tests
// (test/fixtures/doc-yaml/user-guide/update-demo/nautilus-rc.yaml.in upstream) with image.
func updateDemoRC(image string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: ReplicationController
metadata:
  name: update-demo-nautilus
spec:
  replicas: 2
  selector:
    name: update-demo
    version: nautilus
  template:
    metadata:
      labels:
        name: update-demo
        version: nautilus
    spec:
      containers:
      - image: %s
        name: update-demo
        ports:
        - containerPort: 80
          protocol: TCP
`, image)
}

var nautilus struct {
	once sync.Once
	ref  string
	err  error
}

// nautilusImage stands in for registry.k8s.io/e2e-test-images/nautilus: busybox's httpd
// serving /data.json ({"image": "nautilus.jpg"}) on port 80 from its default command, as
// upstream's image serves it from test-webserver.
func nautilusImage(t *testing.T) string {
	t.Helper()
	host := registryHost(t)
	nautilus.once.Do(func() {
		img, err := testimage.Busybox("nautilus")
		if err == nil {
			img, err = testimage.AddFile(img, "/www/data.json", 0o644, []byte(`{"image": "nautilus.jpg"}`+"\n"))
		}
		if err == nil {
			cfg, cerr := img.ConfigFile()
			if err = cerr; err == nil {
				cfg = cfg.DeepCopy()
				cfg.Config.Cmd = []string{"httpd", "-f", "-p", "80", "-h", "/www"}
				img, err = mutate.ConfigFile(img, cfg)
			}
		}
		if err == nil {
			err = testimage.Push(host, "nautilus:1.8", img)
		}
		nautilus.ref, nautilus.err = host+"/nautilus:1.8", err
	})
	if nautilus.err != nil {
		t.Fatalf("the nautilus image: %v", nautilus.err)
	}
	return nautilus.ref
}

// TestKubectlUpdateDemo: kubectl's "Update Demo" conformance tests ("should create and stop
// a replication controller", "should scale a replication controller"), as they drive
// kubectl: create the RC from a manifest on stdin; find its pods with a go template over
// the list; each must say its container is running and its image through templates that
// use the `exists` function, and serve data.json through pods/proxy; kubectl scale rc down
// to 1 and up to 2, checking again each time; then a forced delete leaves no RC and no pod.
func TestKubectlUpdateDemo(t *testing.T) {
	t.Parallel()
	c, _ := nodeCluster(t)
	ns := c.newNamespace(t)
	image := nautilusImage(t)
	manifest := updateDemoRC(image)

	c.mustIn(t, manifest, "create", "-n", ns, "-f", "-")
	validateUpdateDemo(t, c, ns, image, 2)
	c.must(t, "scale", "-n", ns, "rc", "update-demo-nautilus", "--replicas=1", "--timeout=5m")
	validateUpdateDemo(t, c, ns, image, 1)
	c.must(t, "scale", "-n", ns, "rc", "update-demo-nautilus", "--replicas=2", "--timeout=5m")
	validateUpdateDemo(t, c, ns, image, 2)

	c.mustIn(t, manifest, "delete", "-n", ns, "--grace-period=0", "--force", "-f", "-")
	eventually(t, time.Minute, "the RC and its pods to be gone", func() bool {
		left := c.must(t, "get", "-n", ns, "rc,svc", "-l", "name=update-demo", "--no-headers")
		pods := c.must(t, "get", "-n", ns, "pods", "-l", "name=update-demo", "-o",
			`go-template={{ range .items }}{{ if not .metadata.deletionTimestamp }}{{ .metadata.name }}{{ "\n" }}{{ end }}{{ end }}`)
		if left == "" && pods == "" {
			return true
		}
		time.Sleep(500 * time.Millisecond)
		return false
	})
}

// validateUpdateDemo is upstream's validateController: it waits until the RC's pods number
// replicas, and each says through kubectl's templates that its update-demo container runs
// image, and serves the nautilus data through pods/proxy.
func validateUpdateDemo(t *testing.T, c *cluster, ns, image string, replicas int) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(podTimeout); !updateDemoValid(t, c, ns, image, replicas, &last); time.Sleep(time.Second) {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %d update-demo pods running %s; last: %s", podTimeout, replicas, image, last)
		}
	}
}

// updateDemoValid is one round of validateUpdateDemo's checks; it says in last why not.
func updateDemoValid(t *testing.T, c *cluster, ns, image string, replicas int, last *string) bool {
	t.Helper()
	const (
		podsTemplate  = `--template={{range.items}}{{.metadata.name}} {{end}}`
		stateTemplate = `--template={{if (exists . "status" "containerStatuses")}}{{range .status.containerStatuses}}{{if (and (eq .name "update-demo") (exists . "state" "running"))}}true{{end}}{{end}}{{end}}`
		imageTemplate = `--template={{if (exists . "spec" "containers")}}{{range .spec.containers}}{{if eq .name "update-demo"}}{{.image}}{{end}}{{end}}{{end}}`
	)
	pods := strings.Fields(c.must(t, "get", "pods", "-n", ns, "-o", "template", podsTemplate, "-l", "name=update-demo"))
	if len(pods) != replicas {
		*last = fmt.Sprintf("pods %v, want %d", pods, replicas)
		return false
	}
	for _, pod := range pods {
		if running := c.must(t, "get", "pods", pod, "-n", ns, "-o", "template", stateTemplate); running != "true" {
			*last = fmt.Sprintf("%s: running template printed %q", pod, running)
			return false
		}
		if got := c.must(t, "get", "pods", pod, "-n", ns, "-o", "template", imageTemplate); got != image {
			*last = fmt.Sprintf("%s: image template printed %q, want %q", pod, got, image)
			return false
		}
		r := c.kubectl(t, "get", "--raw", "/api/v1/namespaces/"+ns+"/pods/"+pod+"/proxy/data.json")
		if r.code != 0 || !strings.Contains(r.stdout, "nautilus.jpg") {
			*last = fmt.Sprintf("%s: data.json through pods/proxy: %s", pod, r)
			return false
		}
	}
	return true
}
