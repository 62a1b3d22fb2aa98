package apiserver

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/cluster"
	"github.com/berth-cluster/berth/pkg/cluster/pki"
)

// fakeNodeAPI is a node agent's /containerLogs as the API server sees it: HTTPS with a serving
// certificate of the cluster CA, wanting the API server's client certificate.
type fakeNodeAPI struct {
	server  *httptest.Server
	release chan struct{} // lets a followed log go on to its second line
	once    sync.Once

	mu    sync.Mutex
	users []string
}

func startFakeNodeAPI(t *testing.T, pkiDir, nodeName string) *fakeNodeAPI {
	t.Helper()
	ca, err := pki.EnsureCA(pkiDir, "berth-ca")
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile, err := cluster.EnsureNodeServing(pkiDir, nodeName, []net.IP{net.ParseIP("127.0.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	clientCAs := x509.NewCertPool()
	clientCAs.AddCert(ca.Cert)

	f := &fakeNodeAPI{release: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.users = append(f.users, r.TLS.PeerCertificates[0].Subject.CommonName)
		f.mu.Unlock()
		where := r.PathValue("namespace") + "/" + r.PathValue("pod") + "/" + r.PathValue("container")
		if r.PathValue("container") == "waiting" {
			http.Error(w, fmt.Sprintf("container %q in pod %q is waiting to start: ContainerCreating", "waiting", r.PathValue("pod")), http.StatusBadRequest)
			return
		}
		if r.URL.Query().Get("follow") != "true" {
			fmt.Fprintf(w, "hello from %s?%s\n", where, r.URL.RawQuery)
			return
		}
		rc := http.NewResponseController(w)
		fmt.Fprintln(w, "line 1")
		rc.Flush()
		select {
		case <-f.release:
		case <-r.Context().Done():
			return
		}
		fmt.Fprintln(w, "line 2")
	})
	f.server = httptest.NewUnstartedServer(mux)
	f.server.TLS = &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientCAs:    clientCAs,
		ClientAuth:   tls.RequireAndVerifyClientCert,
	}
	f.server.StartTLS()
	t.Cleanup(f.server.Close)
	return f
}

// releaseFollow lets followed logs go on to their second line and end.
func (f *fakeNodeAPI) releaseFollow() { f.once.Do(func() { close(f.release) }) }

func (f *fakeNodeAPI) port(t *testing.T) int32 {
	_, port, err := net.SplitHostPort(f.server.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	var p int32
	fmt.Sscan(port, &p)
	return p
}

// TestPodLogs: kubectl logs and kubectl logs -f through the API server, which finds the pod's
// node and streams its node agent's answer.
func TestPodLogs(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)

	node, err := c.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{GenerateName: "podlog-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Client.CoreV1().Nodes().Delete(ctx, node.Name, metav1.DeleteOptions{}) })
	nodeAPI := startFakeNodeAPI(t, cluster.PKIDir(c.DataDir), node.Name)
	node.Status.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: "127.0.0.1"},
		{Type: corev1.NodeHostName, Address: node.Name},
	}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = nodeAPI.port(t)
	if _, err := c.Client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	createPod := func(name, nodeName string, containers ...string) {
		t.Helper()
		pod := simplePod(name)
		pod.Spec.NodeName = nodeName
		pod.Spec.Containers = nil
		for _, c := range containers {
			pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: c, Image: "busybox:1.36"})
		}
		if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	createPod("one", node.Name, "c")
	createPod("two", node.Name, "a", "waiting")
	createPod("pending", "", "c")
	pods := c.Client.CoreV1().Pods(ns)

	t.Run("logs", func(t *testing.T) {
		for _, tt := range []struct {
			pod  string
			opts corev1.PodLogOptions
			want string
		}{
			{"one", corev1.PodLogOptions{}, fmt.Sprintf("hello from %s/one/c?\n", ns)},
			{"one", corev1.PodLogOptions{TailLines: ptr.To[int64](5), Timestamps: true, Previous: true, LimitBytes: ptr.To[int64](1000)},
				fmt.Sprintf("hello from %s/one/c?limitBytes=1000&previous=true&tailLines=5&timestamps=true\n", ns)},
			{"one", corev1.PodLogOptions{SinceSeconds: ptr.To[int64](60)}, fmt.Sprintf("hello from %s/one/c?sinceSeconds=60\n", ns)},
			{"two", corev1.PodLogOptions{Container: "a"}, fmt.Sprintf("hello from %s/two/a?\n", ns)},
			{"pending", corev1.PodLogOptions{}, ""},
		} {
			got, err := pods.GetLogs(tt.pod, &tt.opts).DoRaw(ctx)
			if err != nil {
				t.Fatalf("logs of %s with %+v: %v", tt.pod, tt.opts, err)
			}
			if string(got) != tt.want {
				t.Errorf("logs of %s with %+v: %q, want %q", tt.pod, tt.opts, got, tt.want)
			}
		}
		nodeAPI.mu.Lock()
		users := nodeAPI.users
		nodeAPI.mu.Unlock()
		if len(users) == 0 || users[0] != cluster.KubeletClientUser {
			t.Errorf("the node API saw users %v, want %s", users, cluster.KubeletClientUser)
		}
	})

	t.Run("errors", func(t *testing.T) {
		for _, tt := range []struct {
			pod   string
			opts  corev1.PodLogOptions
			check func(error) bool
			want  string
		}{
			{"one", corev1.PodLogOptions{TailLines: ptr.To[int64](-1)}, apierrors.IsInvalid, "tailLines: Invalid value: -1: must be greater than or equal to 0"},
			{"one", corev1.PodLogOptions{SinceSeconds: ptr.To[int64](1), SinceTime: ptr.To(metav1.Now())}, apierrors.IsInvalid, "at most one of `sinceTime` or `sinceSeconds` may be specified"},
			{"two", corev1.PodLogOptions{}, apierrors.IsBadRequest, "a container name must be specified for pod two, choose one of: [a waiting]"},
			{"one", corev1.PodLogOptions{Container: "x"}, apierrors.IsBadRequest, "container x is not valid for pod one"},
			{"ghost", corev1.PodLogOptions{}, apierrors.IsNotFound, `pods "ghost" not found`},
			{"two", corev1.PodLogOptions{Container: "waiting"}, apierrors.IsBadRequest, `container "waiting" in pod "two" is waiting to start: ContainerCreating`},
		} {
			// As kubectl logs: a stream, whose errors are the API server's Status.
			stream, err := pods.GetLogs(tt.pod, &tt.opts).Stream(ctx)
			if err == nil {
				stream.Close()
			}
			if err == nil || !tt.check(err) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("logs of %s with %+v: error %v, want one containing %q", tt.pod, tt.opts, err, tt.want)
			}
		}
	})

	t.Run("follow", func(t *testing.T) {
		stream, err := pods.GetLogs("one", &corev1.PodLogOptions{Follow: true}).Stream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer stream.Close()
		lines := bufio.NewReader(stream)
		// The first line arrives while the node still holds the stream open.
		first := make(chan string, 1)
		go func() {
			line, _ := lines.ReadString('\n')
			first <- line
		}()
		select {
		case line := <-first:
			if line != "line 1\n" {
				t.Fatalf("first line %q", line)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the first line of a followed log did not arrive before the log ended")
		}
		nodeAPI.releaseFollow()
		rest, err := io.ReadAll(lines)
		if err != nil || string(rest) != "line 2\n" {
			t.Errorf("the rest of the log: %q, %v", rest, err)
		}
	})

	t.Run("kubectl", func(t *testing.T) {
		kubectl, err := exec.LookPath("kubectl")
		if err != nil {
			t.Fatalf("this test drives the real kubectl, and none is on PATH (.ci/run requires one): %v", err)
		}
		binaries := []string{kubectl}
		if old := filepath.Join(filepath.Dir(kubectl), "kubectl.1.27"); fileExists(old) {
			binaries = append(binaries, old)
		}
		if resolved, err := filepath.EvalSymlinks(kubectl); err == nil {
			if old := filepath.Join(filepath.Dir(resolved), "kubectl.1.27"); fileExists(old) {
				binaries = append(binaries, old)
			}
		}
		kubeconfig := cluster.AdminKubeconfigPath(c.DataDir)
		nodeAPI.releaseFollow()
		for _, bin := range binaries {
			for _, tt := range []struct {
				args []string
				want string
			}{
				{[]string{"logs", "one"}, fmt.Sprintf("hello from %s/one/c?\n", ns)},
				{[]string{"logs", "pod/two", "-c", "a", "--tail=3"}, fmt.Sprintf("hello from %s/two/a?tailLines=3\n", ns)},
				// The fake node's followed log ends once released.
				{[]string{"logs", "-f", "one"}, "line 1\nline 2\n"},
			} {
				args := append([]string{"--kubeconfig", kubeconfig, "-n", ns}, tt.args...)
				out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
				if err != nil || string(out) != tt.want {
					t.Errorf("%s %s: %q, %v; want %q", filepath.Base(bin), strings.Join(tt.args, " "), out, err, tt.want)
				}
			}
			// kubectl picks the first container itself, and says so.
			out, err := exec.CommandContext(ctx, bin, "--kubeconfig", kubeconfig, "-n", ns, "logs", "two").CombinedOutput()
			if err != nil || !strings.Contains(string(out), `Defaulted container "a" out of: a, waiting`) {
				t.Errorf("%s logs two: %q, %v; want the first container's log", filepath.Base(bin), out, err)
			}
			// The node's refusal reaches the user word for word.
			out, err = exec.CommandContext(ctx, bin, "--kubeconfig", kubeconfig, "-n", ns, "logs", "two", "-c", "waiting").CombinedOutput()
			want := `Error from server (BadRequest): container "waiting" in pod "two" is waiting to start: ContainerCreating`
			if err == nil || !strings.Contains(string(out), want) {
				t.Errorf("%s logs two -c waiting: %q, %v; want %q", filepath.Base(bin), out, err, want)
			}
		}
	})
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
