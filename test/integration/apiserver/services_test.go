package apiserver

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/berth-cluster/berth/test/integration/framework"
)

func nodePortService(name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeNodePort,
			Selector: map[string]string{"app": name},
			Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
}

// TestServiceAllocationsConcurrent: 1,000 NodePort Services created at once get 1,000
// distinct cluster IPs and node ports, each cluster IP an IPAddress naming its Service; the
// kubernetes Service holds the range's first IP.
func TestServiceAllocationsConcurrent(t *testing.T) {
	ctx := testContext(t)
	c := sharedCluster(t)
	ns := newNamespace(t, ctx, c.Client)
	const n, workers = 1000, 50
	services := make([]*corev1.Service, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				services[i], errs[i] = c.Client.CoreV1().Services(ns).Create(ctx, nodePortService(fmt.Sprintf("s%d", i)), metav1.CreateOptions{})
			}
		})
	}
	wg.Wait()
	ips, ports := map[string]string{}, map[int32]string{}
	for i, svc := range services {
		if errs[i] != nil {
			t.Fatalf("creating service %d: %v", i, errs[i])
		}
		ip, port := svc.Spec.ClusterIP, svc.Spec.Ports[0].NodePort
		if other, dup := ips[ip]; dup {
			t.Errorf("%s and %s share the cluster IP %s", other, svc.Name, ip)
		}
		if other, dup := ports[port]; dup {
			t.Errorf("%s and %s share the node port %d", other, svc.Name, port)
		}
		if port < 30000 || port > 32767 {
			t.Errorf("%s got node port %d, outside 30000-32767", svc.Name, port)
		}
		if !strings.HasPrefix(ip, "10.") || ip == "10.96.0.1" {
			t.Errorf("%s got cluster IP %s", svc.Name, ip)
		}
		ips[ip], ports[port] = svc.Name, svc.Name
	}
	// Each IP is an IPAddress whose parentRef is its Service.
	list, err := c.Client.NetworkingV1().IPAddresses().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	parents := map[string]string{}
	for _, ip := range list.Items {
		if ref := ip.Spec.ParentRef; ref != nil && ref.Namespace == ns {
			parents[ip.Name] = ref.Name
		}
	}
	for ip, name := range ips {
		if parents[ip] != name {
			t.Errorf("IPAddress %s names %q, want its Service %s", ip, parents[ip], name)
		}
	}
	kube, err := c.Client.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil || kube.Spec.ClusterIP != "10.96.0.1" || kube.Spec.Ports[0].Port != 443 {
		t.Errorf("the kubernetes Service: %+v, %v; want 10.96.0.1:443", kube, err)
	}
	// Deleting them gives everything back.
	for _, svc := range services {
		if err := c.Client.CoreV1().Services(ns).Delete(ctx, svc.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := c.Client.NetworkingV1().IPAddresses().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, ip := range list.Items {
			if ip.Spec.ParentRef != nil && ip.Spec.ParentRef.Namespace == ns {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		t.Errorf("the deleted Services' IPAddresses are still there: %v", err)
	}
}

// TestServiceRangesFullAndRestart: on a cluster whose ranges hold five cluster IPs (a /29
// less the kubernetes Service's) and three node ports, the sixth Service and the fourth node
// port get Kubernetes' errors; after a restart the allocations are kept (still full); a
// deleted Service's IP and port go to the next one.
func TestServiceRangesFullAndRestart(t *testing.T) {
	ctx := testContext(t)
	dir := t.TempDir()
	opts := framework.Options{DataDir: dir, ServiceClusterIPRange: "10.200.0.0/29", ServiceNodePortRange: "30100-30102"}
	c := framework.Start(t, opts)
	// As kube-apiserver's, the kubernetes Service comes once /readyz says yes, so a client
	// quick enough could take its IP first: the test waits for it, to count five IPs left.
	waitFor(t, ctx, "the kubernetes Service", func() (bool, error) {
		kube, err := c.Client.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		return err == nil && kube.Spec.ClusterIP == "10.200.0.1", err
	})
	ns := newNamespace(t, ctx, c.Client)
	clusterIP := func(name string) *corev1.Service {
		svc := nodePortService(name)
		svc.Spec.Type = corev1.ServiceTypeClusterIP
		return svc
	}
	create := func(client kubernetes.Interface, svc *corev1.Service) (*corev1.Service, error) {
		return client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
	}
	for i := range 3 {
		if _, err := create(c.Client, nodePortService(fmt.Sprintf("np%d", i))); err != nil {
			t.Fatalf("node port service %d: %v", i, err)
		}
	}
	_, err := create(c.Client, nodePortService("np-full"))
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "failed to allocate a nodePort: range is full") {
		t.Errorf("a fourth node port: %v, want an internal error `failed to allocate a nodePort: range is full`", err)
	}
	for i := range 2 {
		if _, err := create(c.Client, clusterIP(fmt.Sprintf("ip%d", i))); err != nil {
			t.Fatalf("cluster IP service %d: %v", i, err)
		}
	}
	_, err = create(c.Client, clusterIP("ip-full"))
	if want := `failed to allocate a serviceIP for Service "ip-full": range is full`; !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("a sixth cluster IP: %v, want an internal error %q", err, want)
	}

	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	c = framework.Start(t, opts)
	if _, err := create(c.Client, clusterIP("ip-after-restart")); !apierrors.IsInternalError(err) {
		t.Errorf("after a restart the range is still full, yet: %v", err)
	}
	if _, err := create(c.Client, nodePortService("np-after-restart")); !apierrors.IsInternalError(err) {
		t.Errorf("after a restart the node ports are still all taken, yet: %v", err)
	}
	old, err := c.Client.CoreV1().Services(ns).Get(ctx, "np1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Client.CoreV1().Services(ns).Delete(ctx, "np1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := create(c.Client, nodePortService("np-next"))
	if err != nil {
		t.Fatalf("after a delete: %v", err)
	}
	if got.Spec.ClusterIP != old.Spec.ClusterIP || got.Spec.Ports[0].NodePort != old.Spec.Ports[0].NodePort {
		t.Errorf("the next Service got %s:%d, want the deleted one's %s:%d", got.Spec.ClusterIP, got.Spec.Ports[0].NodePort,
			old.Spec.ClusterIP, old.Spec.Ports[0].NodePort)
	}
}

// TestServiceValidationAndAllocationErrors: a requested IP outside the range or already taken,
// a taken node port, and an invalid Service get 422s naming the field, in Kubernetes' words.
func TestServiceValidationAndAllocationErrors(t *testing.T) {
	ctx := testContext(t)
	c := sharedCluster(t)
	ns := newNamespace(t, ctx, c.Client)
	first, err := c.Client.CoreV1().Services(ns).Create(ctx, nodePortService("first"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		mutate func(*corev1.Service)
		want   string
	}{
		{"taken IP", func(s *corev1.Service) { s.Spec.ClusterIP = first.Spec.ClusterIP },
			fmt.Sprintf(`spec.clusterIPs: Invalid value: ["%[1]s"]: failed to allocate IP %[1]s: provided IP is already allocated`, first.Spec.ClusterIP)},
		{"IP out of range", func(s *corev1.Service) { s.Spec.ClusterIP = "192.168.0.1" },
			`failed to allocate IP 192.168.0.1: the provided IP (192.168.0.1) is not in the valid range. The range of valid IPs is 10.96.0.0/12`},
		{"taken node port", func(s *corev1.Service) { s.Spec.Ports[0].NodePort = first.Spec.Ports[0].NodePort },
			fmt.Sprintf(`spec.ports[0].nodePort: Invalid value: %d: provided port is already allocated`, first.Spec.Ports[0].NodePort)},
		{"node port out of range", func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 1000 },
			`spec.ports[0].nodePort: Invalid value: 1000: provided port is not in the valid range. The range of valid ports is 30000-32767`},
		{"no ports", func(s *corev1.Service) { s.Spec.Ports = nil }, `spec.ports: Required value`},
		{"bad name", func(s *corev1.Service) { s.Name = "Web_1" }, `metadata.name: Invalid value: "Web_1": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-'`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := nodePortService("second")
			tc.mutate(svc)
			_, err := c.Client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want a 422 with %q", err, tc.want)
			}
		})
	}
	// A failed create gives back what it took: the second Service gets an IP after all.
	if _, err := c.Client.CoreV1().Services(ns).Create(ctx, nodePortService("second"), metav1.CreateOptions{}); err != nil {
		t.Errorf("creating a valid Service after the failures: %v", err)
	}
}

// TestServiceDryRun: a server dry run of a NodePort Service with two ports shows a cluster IP
// and two distinct node ports, as kube-apiserver's dry-run allocators do, and takes none of
// them: no IPAddress is stored, and a real create may then take the same IP.
func TestServiceDryRun(t *testing.T) {
	ctx := testContext(t)
	c := sharedCluster(t)
	ns := newNamespace(t, ctx, c.Client)
	svc := nodePortService("dry")
	svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: "b", Port: 81, TargetPort: intstr.FromInt32(8081)})
	svc.Spec.Ports[0].Name = "a"
	got, err := c.Client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.ClusterIP == "" || len(got.Spec.ClusterIPs) != 1 || got.Spec.ClusterIPs[0] != got.Spec.ClusterIP {
		t.Errorf("dry run: clusterIP %q, clusterIPs %v, want one IP in both", got.Spec.ClusterIP, got.Spec.ClusterIPs)
	}
	a, b := got.Spec.Ports[0].NodePort, got.Spec.Ports[1].NodePort
	if a == 0 || b == 0 || a == b {
		t.Errorf("dry run: node ports %d and %d, want two distinct ones", a, b)
	}
	if _, err := c.Client.CoreV1().Services(ns).Get(ctx, "dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after a dry run, get: %v, want NotFound", err)
	}
	if _, err := c.Client.NetworkingV1().IPAddresses().Get(ctx, got.Spec.ClusterIP, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the dry run's IP %s has an IPAddress (%v): it was taken", got.Spec.ClusterIP, err)
	}
	svc.Spec.ClusterIP = got.Spec.ClusterIP
	svc.Spec.Ports[0].NodePort, svc.Spec.Ports[1].NodePort = a, b
	if _, err := c.Client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Errorf("creating the Service with the dry run's IP and ports: %v", err)
	}
}
