package dns

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"reflect"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

const (
	benchNamespaces = 10
	benchServices   = 1000 // in all
	benchEndpoints  = 3    // per Service
)

// benchCluster is 1,000 Services over 10 namespaces as a Deployment's and a StatefulSet's
// are: nine in ten with a cluster IP and two ports, one in ten headless with hostnames; each
// with an EndpointSlice of three ready endpoints. The objects carry what the API server gives
// them (UIDs, labels, owner references, managed fields), so that what the informers would keep
// without berth's transforms is measured too.
func benchCluster() (objs []kruntime.Object, names []string) {
	managed := func(manager string) []metav1.ManagedFieldsEntry {
		return []metav1.ManagedFieldsEntry{{
			Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", FieldsType: "FieldsV1",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{".":{},"f:app":{},"f:app.kubernetes.io/name":{}}},"f:spec":{"f:ports":{".":{},"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:name":{},"f:port":{},"f:protocol":{},"f:targetPort":{}}},"f:selector":{},"f:type":{}}}`)},
		}}
	}
	now := metav1.Now()
	for n := range benchNamespaces {
		ns := fmt.Sprintf("team-%02d", n)
		objs = append(objs, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, UID: types.UID(fmt.Sprintf("ns-%d", n)), CreationTimestamp: now}})
		for i := range benchServices / benchNamespaces {
			name := fmt.Sprintf("service-%03d", i)
			k := n*(benchServices/benchNamespaces) + i
			labels := map[string]string{"app": name, "app.kubernetes.io/name": name, "app.kubernetes.io/part-of": ns}
			svc := &v1.Service{
				ObjectMeta: metav1.ObjectMeta{
					Namespace: ns, Name: name, UID: types.UID(fmt.Sprintf("svc-%d", k)), ResourceVersion: "1", CreationTimestamp: now,
					Labels: labels, ManagedFields: managed("kubectl-client-side-apply"),
				},
				Spec: v1.ServiceSpec{
					Type: v1.ServiceTypeClusterIP, Selector: map[string]string{"app": name},
					SessionAffinity: v1.ServiceAffinityNone, IPFamilies: []v1.IPFamily{v1.IPv4Protocol},
					IPFamilyPolicy: ptr.To(v1.IPFamilyPolicySingleStack), InternalTrafficPolicy: ptr.To(v1.ServiceInternalTrafficPolicyCluster),
					Ports: []v1.ServicePort{
						{Name: "http", Port: 80, Protocol: v1.ProtocolTCP},
						{Name: "metrics", Port: 9090, Protocol: v1.ProtocolTCP},
					},
				},
			}
			ip := net.IPv4(10, 96, byte(k/250+1), byte(k%250+1)).String()
			svc.Spec.ClusterIP, svc.Spec.ClusterIPs = ip, []string{ip}
			headless := i%10 == 9
			if headless {
				svc.Spec.ClusterIP, svc.Spec.ClusterIPs = v1.ClusterIPNone, []string{v1.ClusterIPNone}
			}
			slice := &discoveryv1.EndpointSlice{
				ObjectMeta: metav1.ObjectMeta{
					Namespace: ns, Name: name + "-x7k2p", UID: types.UID(fmt.Sprintf("slice-%d", k)), ResourceVersion: "1", CreationTimestamp: now,
					Labels: map[string]string{
						discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io",
						"app": name, "endpointslice.kubernetes.io/skip-mirror": "true",
					},
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: name, UID: svc.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
					ManagedFields:   managed("endpointslice-controller"),
				},
				AddressType: discoveryv1.AddressTypeIPv4,
				Ports: []discoveryv1.EndpointPort{
					{Name: ptr.To("http"), Port: ptr.To(int32(8080)), Protocol: ptr.To(v1.ProtocolTCP)},
					{Name: ptr.To("metrics"), Port: ptr.To(int32(9090)), Protocol: ptr.To(v1.ProtocolTCP)},
				},
			}
			for e := range benchEndpoints {
				pod := fmt.Sprintf("%s-7d9f8b6c5-%05d", name, e)
				ep := discoveryv1.Endpoint{
					Addresses:  []string{net.IPv4(10, 244, byte(k/80), byte(k%80*3+e+1)).String()},
					Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
					TargetRef:  &v1.ObjectReference{Kind: "Pod", Namespace: ns, Name: pod, UID: types.UID("pod-" + pod)},
					NodeName:   ptr.To(fmt.Sprintf("node-%d", e)),
					Zone:       ptr.To("zone-a"),
				}
				if headless {
					ep.Hostname = ptr.To(fmt.Sprintf("%s-%d", name, e))
				}
				slice.Endpoints = append(slice.Endpoints, ep)
			}
			objs = append(objs, svc, slice)
			names = append(names, name+"."+ns+".svc.cluster.local.")
		}
	}
	return objs, names
}

// roundTrip is obj encoded to JSON and decoded again, as a client receives it.
func roundTrip(b testing.TB, obj kruntime.Object) kruntime.Object {
	data, err := json.Marshal(obj)
	if err != nil {
		b.Fatal(err)
	}
	out := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(kruntime.Object)
	if err := json.Unmarshal(data, out); err != nil {
		b.Fatal(err)
	}
	return out
}

// decodedLists makes client's lists of Services, EndpointSlices and Namespaces arrive decoded
// (roundTrip) rather than as copies of the fake's objects, whose strings the fake keeps: the
// memory the informers keep is then what it is against a real API server.
func decodedLists(b testing.TB, client *fake.Clientset) {
	for _, resource := range []string{"services", "endpointslices", "namespaces"} {
		client.PrependReactor("list", resource, func(action k8stesting.Action) (bool, kruntime.Object, error) {
			obj, err := client.Tracker().List(action.GetResource(), listKinds[resource], action.GetNamespace())
			if err != nil {
				return true, nil, err
			}
			return true, roundTrip(b, obj), nil
		})
	}
}

var listKinds = map[string]schema.GroupVersionKind{
	"services":       v1.SchemeGroupVersion.WithKind("Service"),
	"endpointslices": discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"),
	"namespaces":     v1.SchemeGroupVersion.WithKind("Namespace"),
}

func heapInUse() uint64 {
	var m runtime.MemStats
	for range 3 {
		runtime.GC()
	}
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkQueries measures queries per second over UDP on loopback against a cluster of
// 1,000 Services (A queries of every Service in turn, from 8 clients per core, each waiting for
// its answer), and the memory berth's records of that cluster take: the informers' caches and
// the store, per Service (records-B/service), beside the same objects as the API serves them
// (api-objects-B/service), which an informer without transforms would keep.
func BenchmarkQueries(b *testing.B) {
	objs, names := benchCluster()
	client := fake.NewClientset(objs...)
	decodedLists(b, client)

	// The objects as a client decodes them from the API server: every string its own.
	before := heapInUse()
	decoded := make([]kruntime.Object, len(objs))
	for i, o := range objs {
		decoded[i] = roundTrip(b, o)
	}
	api := heapInUse() - before
	runtime.KeepAlive(decoded)
	decoded = nil

	before = heapInUse()
	s, err := newServer(client, Config{Listen: []string{"127.0.0.1:0"}}, noResolvConf)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}()
	<-s.Ready()
	waitFor(b, "the records to sync", s.HasSynced)
	records := heapInUse() - before

	addr := s.Addrs()[0]
	var next, failed atomic.Int64
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		conn, err := net.Dial("udp", addr)
		if err != nil {
			b.Error(err)
			return
		}
		co := &dns.Conn{Conn: conn}
		defer co.Close()
		req := new(dns.Msg)
		for pb.Next() {
			req.SetQuestion(names[int(next.Add(1))%len(names)], dns.TypeA)
			_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
			if err := co.WriteMsg(req); err != nil {
				failed.Add(1)
				continue
			}
			m, err := co.ReadMsg()
			if err != nil || m.Id != req.Id || len(m.Answer) == 0 {
				failed.Add(1)
			}
		}
	})
	b.StopTimer()
	if n := failed.Load(); n > int64(b.N)/1000 {
		b.Errorf("%d of %d queries failed", n, b.N)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "queries/s")
	b.ReportMetric(float64(records)/benchServices, "records-B/service")
	b.ReportMetric(float64(api)/benchServices, "api-objects-B/service")
	runtime.KeepAlive(s)
	runtime.KeepAlive(objs) // alive throughout, so that the heap's differences are what was added
}

// BenchmarkServeDNS is the cost of answering one query with no socket: the resolver and the
// message, for a Service with a cluster IP and for a headless one.
func BenchmarkServeDNS(b *testing.B) {
	objs, names := benchCluster()
	s := newTestServer(b, fake.NewClientset(objs...), Config{})
	for _, tt := range []struct{ name, qname string }{{"cluster IP", names[0]}, {"headless", names[9]}} {
		b.Run(tt.name, func(b *testing.B) {
			req := new(dns.Msg)
			req.SetQuestion(tt.qname, dns.TypeA)
			w := &nopWriter{}
			b.ReportAllocs()
			for b.Loop() {
				s.ServeDNS(w, req)
			}
		})
	}
}

type nopWriter struct{ recorder }

func (*nopWriter) WriteMsg(m *dns.Msg) error { _, err := m.Pack(); return err }
