package apiserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/cert"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/test/integration/framework"
)

// TestAggregatedAPI: an APIService whose Service's EndpointSlice points at an aggregated API
// server becomes Available; its group is in /apis and in aggregated discovery; lists reach
// it through the aggregator, which connects with the front proxy's client certificate and
// says who the caller is in X-Remote-User and X-Remote-Group, as kube-apiserver does.
func TestAggregatedAPI(t *testing.T) {
	c := quietCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	aggregator := aggregatorclient.NewForConfigOrDie(c.Config)
	ip := hostIP(t)

	const group, version = "wardle.berth.test", "v1"
	service := "wardle"
	backend := startAggregatedServer(t, c, ip, service+"."+ns+".svc", group, version, ns)
	registerService(t, ctx, c.Client, ns, service, []discoveryv1.Endpoint{{Addresses: []string{ip.String()}}}, backend.port)
	apiService := &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: version + "." + group},
		Spec: apiregistrationv1.APIServiceSpec{
			Service:              &apiregistrationv1.ServiceReference{Namespace: ns, Name: service, Port: ptr.To[int32](443)},
			Group:                group,
			Version:              version,
			CABundle:             backend.caBundle,
			GroupPriorityMinimum: 2000,
			VersionPriority:      200,
		},
	}
	if _, err := aggregator.ApiregistrationV1().APIServices().Create(ctx, apiService, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = aggregator.ApiregistrationV1().APIServices().Delete(context.Background(), apiService.Name, metav1.DeleteOptions{})
	})
	available := waitForAvailable(t, ctx, aggregator, apiService.Name, func(cond apiregistrationv1.APIServiceCondition) bool {
		return cond.Status == apiregistrationv1.ConditionTrue
	})
	if available.Reason != "Passed" {
		t.Errorf("Available condition: %+v, want reason Passed", available)
	}

	// Listed through the aggregator, as the admin.
	gvr := schema.GroupVersionResource{Group: group, Version: version, Resource: "flunders"}
	var list []string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		l, err := dynamic.NewForConfigOrDie(c.Config).Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Logf("listing flunders: %v", err)
			return false, nil
		}
		list = nil
		for _, item := range l.Items {
			list = append(list, item.GetName())
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("listing through the aggregator: %v", err)
	}
	if !slices.Equal(list, []string{"one", "two"}) {
		t.Errorf("flunders: %v, want [one two]", list)
	}
	seen, ok := backend.request("/apis/" + group + "/" + version + "/namespaces/" + ns + "/flunders")
	if !ok {
		t.Fatal("the aggregated server saw no list")
	}
	if seen.client != "front-proxy-client" || seen.user != "admin" ||
		!slices.Contains(seen.groups, "system:masters") || !slices.Contains(seen.groups, "system:authenticated") {
		t.Errorf("the list came from certificate %q for user %q in %v; want front-proxy-client for admin in system:masters and system:authenticated",
			seen.client, seen.user, seen.groups)
	}

	// Discovery: the group in /apis, and its version and resource in the aggregated document.
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var groups metav1.APIGroupList
		if err := getJSON(ctx, c.Client, "/apis", "application/json", &groups); err != nil {
			return false, err
		}
		if !slices.ContainsFunc(groups.Groups, func(g metav1.APIGroup) bool { return g.Name == group }) {
			return false, nil
		}
		var aggregated apidiscoveryv2.APIGroupDiscoveryList
		if err := getJSON(ctx, c.Client, "/apis", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", &aggregated); err != nil {
			return false, err
		}
		for _, g := range aggregated.Items {
			if g.Name != group {
				continue
			}
			for _, v := range g.Versions {
				if v.Version == version && slices.ContainsFunc(v.Resources, func(r apidiscoveryv2.APIResourceDiscovery) bool { return r.Resource == "flunders" }) {
					return true, nil
				}
			}
		}
		return false, nil
	})
	if err != nil {
		t.Errorf("%s/%s flunders in /apis and in aggregated discovery: %v", group, version, err)
	}
}

// TestAPIServiceMissingEndpoints: an APIService whose Service has no ready endpoint is not
// Available, with kube-apiserver's reason and message.
func TestAPIServiceMissingEndpoints(t *testing.T) {
	c := quietCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	aggregator := aggregatorclient.NewForConfigOrDie(c.Config)
	registerService(t, ctx, c.Client, ns, "nowhere", nil, 8443)
	apiService := &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: "v1.nowhere.berth.test"},
		Spec: apiregistrationv1.APIServiceSpec{
			Service:               &apiregistrationv1.ServiceReference{Namespace: ns, Name: "nowhere", Port: ptr.To[int32](443)},
			Group:                 "nowhere.berth.test",
			Version:               "v1",
			InsecureSkipTLSVerify: true,
			GroupPriorityMinimum:  2000,
			VersionPriority:       200,
		},
	}
	if _, err := aggregator.ApiregistrationV1().APIServices().Create(ctx, apiService, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = aggregator.ApiregistrationV1().APIServices().Delete(context.Background(), apiService.Name, metav1.DeleteOptions{})
	})
	cond := waitForAvailable(t, ctx, aggregator, apiService.Name, func(cond apiregistrationv1.APIServiceCondition) bool {
		return cond.Reason == "MissingEndpoints"
	})
	want := fmt.Sprintf(`endpointslices for service/nowhere in %q have no addresses with port name "https"`, ns)
	if cond.Status != apiregistrationv1.ConditionFalse || cond.Message != want {
		t.Errorf("Available condition: %+v, want False with message %q", cond, want)
	}
}

// TestFrontProxyAuthentication: a request with the front proxy's certificate is the user of
// its headers; the same headers from another client are ignored; the
// extension-apiserver-authentication ConfigMap says whom to trust and how.
func TestFrontProxyAuthentication(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)

	proxied := kubernetes.NewForConfigOrDie(c.FrontProxyConfig("jane", "developers"))
	review, err := proxied.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("who am I, through the front proxy: %v", err)
	}
	if u := review.Status.UserInfo; u.Username != "jane" || !slices.Equal(u.Groups, []string{"developers", "system:authenticated"}) {
		t.Errorf("through the front proxy: %q in %v, want jane in [developers system:authenticated]", u.Username, u.Groups)
	}
	// The admin's certificate is from the cluster CA, not the front proxy's: the headers say
	// nothing.
	admin := *c.Config
	admin.Impersonate.UserName = ""
	adminHeaders := c.FrontProxyConfig("jane")
	admin.WrapTransport = adminHeaders.WrapTransport
	review, err = kubernetes.NewForConfigOrDie(&admin).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if review.Status.UserInfo.Username != "admin" {
		t.Errorf("the admin's certificate with X-Remote-User: jane is %q, want admin", review.Status.UserInfo.Username)
	}

	var cm *corev1.ConfigMap
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		cm, err = c.Client.CoreV1().ConfigMaps("kube-system").Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("kube-system/extension-apiserver-authentication: %v", err)
	}
	for key, file := range map[string]string{
		"client-ca-file":               c.DataDir + "/pki/ca.crt",
		"requestheader-client-ca-file": c.FrontProxyCAFile(),
	} {
		if !sameCertificates(t, cm.Data[key], file) {
			t.Errorf("%s: %q, want the certificates of %s", key, cm.Data[key], file)
		}
	}
	for key, want := range map[string]string{
		"requestheader-allowed-names":        `["front-proxy-client"]`,
		"requestheader-username-headers":     `["X-Remote-User"]`,
		"requestheader-group-headers":        `["X-Remote-Group"]`,
		"requestheader-extra-headers-prefix": `["X-Remote-Extra-"]`,
	} {
		if got := cm.Data[key]; got != want {
			t.Errorf("%s: %s, want %s", key, got, want)
		}
	}
}

func sameCertificates(t *testing.T, bundle, file string) bool {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	want, err := cert.ParseCertsPEM(data)
	if err != nil {
		t.Fatal(err)
	}
	got, err := cert.ParseCertsPEM([]byte(bundle))
	if err != nil {
		return false
	}
	return slices.EqualFunc(got, want, func(a, b *x509.Certificate) bool { return a.Equal(b) })
}

// hostIP is an address of this machine that an EndpointSlice may hold (not a loopback one).
func hostIP(t *testing.T) net.IP {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() {
			return n.IP
		}
	}
	// These machines all have one (eth0); a test that cannot run must fail, not skip.
	t.Fatal("no global unicast IPv4 address for the aggregated server's endpoint")
	return nil
}

// registerService makes a Service without a selector, port https 443, and its EndpointSlice
// with endpoints at targetPort.
func registerService(t *testing.T, ctx context.Context, client kubernetes.Interface, ns, name string, endpoints []discoveryv1.Endpoint, targetPort int) {
	t.Helper()
	_, err := client.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{
			Name: "https", Port: 443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt(targetPort),
		}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.DiscoveryV1().EndpointSlices(ns).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   endpoints,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(targetPort)), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

func waitForAvailable(t *testing.T, ctx context.Context, client aggregatorclient.Interface, name string, done func(apiregistrationv1.APIServiceCondition) bool) apiregistrationv1.APIServiceCondition {
	t.Helper()
	var last apiregistrationv1.APIServiceCondition
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 45*time.Second, true, func(ctx context.Context) (bool, error) {
		s, err := client.ApiregistrationV1().APIServices().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range s.Status.Conditions {
			if cond.Type == apiregistrationv1.Available {
				last = cond
				return done(cond), nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("APIService %s: %v; its Available condition: %+v", name, err, last)
	}
	return last
}

func getJSON(ctx context.Context, client kubernetes.Interface, path, accept string, into any) error {
	body, err := client.Discovery().RESTClient().Get().AbsPath(path).SetHeader("Accept", accept).DoRaw(ctx)
	if err != nil {
		return err
	}
	return json.Unmarshal(body, into)
}

// aggregatedServer is a small aggregated API server: discovery of group/version with one
// namespaced resource, flunders, and a list of two of them in namespace ns. It records who
// each request came from: the client certificate's common name (which must be of the front
// proxy's CA) and the X-Remote-User and X-Remote-Group headers.
type aggregatedServer struct {
	port     int
	caBundle []byte
	mu       sync.Mutex
	seen     map[string]seenRequest
}

type seenRequest struct {
	client, user string
	groups       []string
}

func (s *aggregatedServer) request(path string) (seenRequest, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.seen[path]
	return r, ok
}

func startAggregatedServer(t *testing.T, c *framework.Cluster, ip net.IP, serverName, group, version, ns string) *aggregatedServer {
	t.Helper()
	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey(serverName, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	proxyCA, err := cert.NewPool(c.FrontProxyCAFile())
	if err != nil {
		t.Fatal(err)
	}
	s := &aggregatedServer{caBundle: certPEM, seen: map[string]seenRequest{}}
	gv := group + "/" + version
	mux := http.NewServeMux()
	mux.HandleFunc("/apis/"+gv, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: gv,
			APIResources: []metav1.APIResource{{Name: "flunders", SingularName: "flunder", Namespaced: true, Kind: "Flunder", Verbs: []string{"get", "list"}}},
		})
	})
	mux.HandleFunc("/apis/"+gv+"/namespaces/"+ns+"/flunders", func(w http.ResponseWriter, r *http.Request) {
		item := func(name string) map[string]any {
			return map[string]any{"apiVersion": gv, "kind": "Flunder", "metadata": map[string]any{"name": name, "namespace": ns}}
		}
		writeJSON(w, map[string]any{"apiVersion": gv, "kind": "FlunderList", "metadata": map[string]any{}, "items": []any{item("one"), item("two")}})
	})
	server := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			seen := seenRequest{user: r.Header.Get("X-Remote-User"), groups: r.Header.Values("X-Remote-Group")}
			if len(r.TLS.VerifiedChains) > 0 {
				seen.client = r.TLS.VerifiedChains[0][0].Subject.CommonName
			}
			s.mu.Lock()
			s.seen[r.URL.Path] = seen
			s.mu.Unlock()
			if seen.client == "" {
				http.Error(w, "no front-proxy client certificate", http.StatusUnauthorized)
				return
			}
			mux.ServeHTTP(w, r)
		}),
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{pair},
			ClientAuth:   tls.VerifyClientCertIfGiven,
			ClientCAs:    proxyCA,
		},
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	s.port, _ = strconv.Atoi(port)
	go func() { _ = server.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { server.Close() })
	return s
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
