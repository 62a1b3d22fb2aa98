package nodetest

import (
	"context"
	"net"
	"net/url"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/berth-cluster/berth/pkg/node/envvars"
	"github.com/berth-cluster/berth/test/integration/framework"
)

// TestNodeServiceEnvWithoutServicesAPI: berth's API server serves no Services yet; the node
// agent's Services informer gets 404 and counts that as no services, so pods start at once,
// with no CreateContainerConfigError on the way, and with the kubernetes Service's variables
// pointing at the API server the node's kubeconfig names, its loopback address replaced by
// the node's InternalIP.
func TestNodeServiceEnvWithoutServicesAPI(t *testing.T) {
	c := framework.StartShared(t)
	nodeIP := net.ParseIP("192.0.2.10")
	// berth's API server serves Services now: the stand-in is what a node without a service
	// proxy (berth up's) gives, the same variables as for an API server without them.
	n := StartNode(t, c, "serviceenv-unserved", NodeOptions{NodeIP: nodeIP, ReplaceKubernetesService: true})
	n.WaitForNodeReady(t, podTimeout)
	start := time.Now()
	pod := createPod(t, c, MakePod("no-services").Node(n.Name).Container("app", "nginx:1.27").Obj())
	WaitForPod(t, c.Client, pod.Namespace, pod.Name, podTimeout, "Running, never held back", func(p *v1.Pod) bool {
		if r := WaitingReason(p); r == "CreateContainerConfigError" {
			t.Fatalf("the container waits with %s: %s", r, p.Status.ContainerStatuses[0].State.Waiting.Message)
		}
		return Running(p)
	})
	// Not after the wait a pod gives services that are still being listed.
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("the pod took %v to run", d)
	}
	env := n.ContainerEnv(string(pod.UID), "app")
	if env == nil {
		t.Fatal("the node agent created no container")
	}
	u, err := url.Parse(c.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	if host := u.Hostname(); !net.ParseIP(host).IsLoopback() {
		t.Fatalf("the framework's API server is at %s; the test expects a loopback address", c.Config.Host)
	}
	port := u.Port()
	want := map[string]string{
		"KUBERNETES_SERVICE_HOST":                "192.0.2.10",
		"KUBERNETES_SERVICE_PORT":                port,
		"KUBERNETES_SERVICE_PORT_HTTPS":          port,
		"KUBERNETES_PORT":                        "tcp://192.0.2.10:" + port,
		"KUBERNETES_PORT_" + port + "_TCP":       "tcp://192.0.2.10:" + port,
		"KUBERNETES_PORT_" + port + "_TCP_PROTO": "tcp",
		"KUBERNETES_PORT_" + port + "_TCP_PORT":  port,
		"KUBERNETES_PORT_" + port + "_TCP_ADDR":  "192.0.2.10",
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s=%q, want %q", k, env[k], v)
		}
	}
}

// TestNodeServiceEnv: the node agent gives containers the variables of their namespace's
// Services and of default/kubernetes, under the container's own, from a Services informer
// (here on a fake client that serves Services, as an upstream kube-apiserver does).
func TestNodeServiceEnv(t *testing.T) {
	c := framework.StartShared(t)
	client := fake.NewClientset(
		&v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"},
			Spec: v1.ServiceSpec{ClusterIP: "10.96.0.1", Ports: []v1.ServicePort{{Name: "https", Port: 443, Protocol: v1.ProtocolTCP}}}},
		&v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "fooservice"},
			Spec: v1.ServiceSpec{ClusterIP: "10.96.5.6", Ports: []v1.ServicePort{{Port: 8765, Protocol: v1.ProtocolTCP}}}},
		&v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "headless"},
			Spec: v1.ServiceSpec{ClusterIP: v1.ClusterIPNone, Ports: []v1.ServicePort{{Port: 80}}}},
	)
	services := envvars.NewServices(client)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { services.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	n := StartNode(t, c, "serviceenv", NodeOptions{Services: services})
	n.WaitForNodeReady(t, podTimeout)
	links := MakePod("links").Node(n.Name).Container("app", "nginx:1.27").Obj()
	links.Spec.Containers[0].Env = []v1.EnvVar{
		{Name: "FOOSERVICE_SERVICE_PORT", Value: "mine"}, // the container's own wins
		{Name: "FOO_URL", Value: "http://$(FOOSERVICE_SERVICE_HOST):$(FOOSERVICE_PORT_8765_TCP_PORT)"},
	}
	noLinks := MakePod("no-links").Node(n.Name).Container("app", "nginx:1.27").Obj()
	noLinks.Spec.EnableServiceLinks = new(bool)
	pods := []*v1.Pod{createPod(t, c, links), createPod(t, c, noLinks)}
	for _, p := range pods {
		WaitForPod(t, c.Client, p.Namespace, p.Name, podTimeout, "Running", Running)
	}

	env := n.ContainerEnv(string(pods[0].UID), "app")
	want := map[string]string{
		"FOOSERVICE_SERVICE_HOST":        "10.96.5.6",
		"FOOSERVICE_SERVICE_PORT":        "mine",
		"FOOSERVICE_PORT":                "tcp://10.96.5.6:8765",
		"FOOSERVICE_PORT_8765_TCP":       "tcp://10.96.5.6:8765",
		"FOOSERVICE_PORT_8765_TCP_PROTO": "tcp",
		"FOOSERVICE_PORT_8765_TCP_PORT":  "8765",
		"FOOSERVICE_PORT_8765_TCP_ADDR":  "10.96.5.6",
		"FOO_URL":                        "http://10.96.5.6:8765",
		"KUBERNETES_SERVICE_HOST":        "10.96.0.1",
		"KUBERNETES_SERVICE_PORT":        "443",
		"KUBERNETES_SERVICE_PORT_HTTPS":  "443",
		"KUBERNETES_PORT":                "tcp://10.96.0.1:443",
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("links: $%s = %q, want %q", k, env[k], v)
		}
	}
	if v, ok := env["HEADLESS_SERVICE_HOST"]; ok {
		t.Errorf("links: a headless service has HEADLESS_SERVICE_HOST=%q", v)
	}

	env = n.ContainerEnv(string(pods[1].UID), "app")
	if env["KUBERNETES_SERVICE_HOST"] != "10.96.0.1" {
		t.Errorf("enableServiceLinks false: KUBERNETES_SERVICE_HOST = %q, want 10.96.0.1 (always given)", env["KUBERNETES_SERVICE_HOST"])
	}
	if v, ok := env["FOOSERVICE_SERVICE_HOST"]; ok {
		t.Errorf("enableServiceLinks false: FOOSERVICE_SERVICE_HOST=%q", v)
	}

}
