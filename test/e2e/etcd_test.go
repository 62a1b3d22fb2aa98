package e2e

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

var etcdBuild struct {
	sync.Once
	bin string
	err error
}

// etcdBinary builds the real etcd server from the module cache, once.
func etcdBinary(t *testing.T) string {
	t.Helper()
	etcdBuild.Do(func() {
		etcdBuild.bin = filepath.Join(workDir, "bin", "etcd")
		etcdBuild.err = goBuild(etcdBuild.bin, "go.etcd.io/etcd/server/v3")
	})
	if etcdBuild.err != nil {
		t.Fatal(etcdBuild.err)
	}
	return etcdBuild.bin
}

// startEtcd runs a one-member etcd on free loopback ports until the test ends, and returns
// its client URL once it is healthy.
func startEtcd(t *testing.T) string {
	t.Helper()
	bin := etcdBinary(t)
	clientPort, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	peerPort, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	client := "http://127.0.0.1:" + strconv.Itoa(clientPort)
	peer := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	p, err := startProcess("etcd", bin,
		"--name", "e2e",
		"--data-dir", filepath.Join(t.TempDir(), "etcd"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "e2e="+peer,
		"--log-level", "warn")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// etcd re-raises SIGTERM after its clean-up, so it ends "killed by SIGTERM".
		var exit *exec.ExitError
		if err := p.stop(stopTimeout); err != nil &&
			!(errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signal() == syscall.SIGTERM) {
			t.Errorf("etcd did not stop on SIGTERM: %v", err)
		}
		if t.Failed() {
			t.Logf("etcd's output:\n%s", tail(p.output.String(), 100))
		}
	})
	eventually(t, 30*time.Second, "etcd to be healthy", func() bool {
		if p.exited() {
			t.Fatalf("etcd exited (%v):\n%s", p.err, p.output.String())
		}
		resp, err := http.Get(client + "/health")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == 200 && strings.Contains(string(body), `"health":"true"`)
	})
	return client
}

// TestExternalEtcd: berth apiserver --etcd-servers keeps its objects in an etcd of its own
// process, under /registry, as protobuf.
func TestExternalEtcd(t *testing.T) {
	t.Parallel()
	etcdURL := startEtcd(t)
	c := startCluster(t, "apiserver", t.TempDir(), "--etcd-servers", etcdURL)

	out := c.must(t, "get", "namespaces")
	wantHeader(t, out, "NAME", "STATUS", "AGE")
	wantPrefix(t, row(t, out, "default"), "default", "Active")
	// Without the controllers, nothing creates the default service account a pod needs:
	// apply makes sure it is there.
	manifests := "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: default\n  namespace: default\n---\n" +
		podManifest("default", "stored", "busybox:1.36") + "---\n" +
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: stored\n  namespace: default\ndata:\n  marker: e2e-marker-value\n---\n" +
		"apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: stored\n  namespace: default\nspec:\n  holderIdentity: e2e-holder\n---\n" +
		"apiVersion: v1\nkind: Node\nmetadata:\n  name: e2e-stored-node\n"
	out = c.mustIn(t, manifests, "apply", "-f", "-")
	wantContains(t, out, "pod/stored created", "configmap/stored created", "lease.coordination.k8s.io/stored created", "node/e2e-stored-node created")
	wantPrefix(t, row(t, c.must(t, "get", "pods"), "stored"), "stored", "0/1", "Pending", "0")
	if out := c.must(t, "get", "configmap", "stored", "-o", "jsonpath={.data.marker}"); out != "e2e-marker-value" {
		t.Errorf("config map data %q", out)
	}

	etcd, err := clientv3.New(clientv3.Config{Endpoints: []string{etcdURL}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("connecting to etcd: %v", err)
	}
	defer etcd.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := etcd.Get(ctx, "/registry/", clientv3.WithPrefix())
	if err != nil {
		t.Fatalf("reading /registry/ from etcd: %v", err)
	}
	values := map[string]string{}
	var keys []string
	for _, kv := range resp.Kvs {
		values[string(kv.Key)] = string(kv.Value)
		keys = append(keys, string(kv.Key))
	}
	t.Logf("%d keys under /registry/:\n%s", len(keys), strings.Join(keys, "\n"))
	for key, contains := range map[string]string{
		"/registry/pods/default/stored":       "busybox:1.36",
		"/registry/configmaps/default/stored": "e2e-marker-value",
		"/registry/leases/default/stored":     "e2e-holder",
		"/registry/namespaces/default":        "default",
	} {
		v, ok := values[key]
		switch {
		case !ok:
			t.Errorf("etcd has no key %s", key)
		case !strings.HasPrefix(v, "k8s\x00"):
			t.Errorf("%s is not stored as Kubernetes protobuf: %q", key, v[:min(len(v), 40)])
		case !strings.Contains(v, contains):
			t.Errorf("%s does not hold %q", key, contains)
		}
	}
	// Kubernetes keeps nodes under /registry/minions; berth may choose its own key.
	found := false
	for _, k := range keys {
		found = found || strings.HasSuffix(k, "/e2e-stored-node") && strings.Contains(values[k], "e2e-stored-node")
	}
	if !found {
		t.Error("etcd holds no key for node e2e-stored-node")
	}

	// A delete through kubectl removes the key.
	c.must(t, "delete", "configmap", "stored")
	got, err := etcd.Get(ctx, "/registry/configmaps/default/stored")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Kvs) != 0 {
		t.Error("the config map's key is still in etcd after kubectl delete")
	}
	if err := c.stop(); err != nil {
		t.Errorf("berth apiserver did not stop cleanly: %v", err)
	}
}
