package endpoints

import (
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/endpointslice"
	endpointsliceutil "k8s.io/endpointslice/util"
	utilnet "k8s.io/utils/net"
)

// Upstream's names for what this controller writes.
const (
	// LabelManagedBy and ControllerName mark the Endpoints this controller manages.
	LabelManagedBy = "endpoints.kubernetes.io/managed-by"
	ControllerName = "endpoint-controller"

	// MaxCapacity is the most addresses, ready and not, one Endpoints holds; the rest are
	// left out and the Endpoints annotated corev1.EndpointsOverCapacity: Truncated.
	MaxCapacity = 1000
	Truncated   = "truncated"
)

// desiredSubsets are the subsets of svc's Endpoints, repacked, from the pods its selector
// matches. A pod is in them once it has an IP of the Service's (first) family, unless it is
// terminal, or terminating and the Service does not publish not-ready addresses; it is ready
// when its Ready condition is true or the Service publishes not-ready addresses. It serves
// each port of the Service whose targetPort it resolves (a name is looked up in its
// containers' ports, so pods may serve one Service port on different numbers); a headless
// Service without ports gets its pods' addresses without ports.
func desiredSubsets(svc *corev1.Service, pods []*corev1.Pod) []corev1.EndpointSubset {
	var subsets []corev1.EndpointSubset
	publishNotReady := svc.Spec.PublishNotReadyAddresses
	for _, pod := range pods {
		if !endpointsliceutil.ShouldPodBeInEndpoints(pod, publishNotReady) {
			continue
		}
		addr, ok := podAddress(svc, pod)
		if !ok {
			continue // no IP of the Service's family: a dual-stack cluster mid-upgrade
		}
		ready := publishNotReady || endpointsliceutil.IsPodReady(pod)
		if len(svc.Spec.Ports) == 0 {
			if svc.Spec.ClusterIP == corev1.ClusterIPNone {
				subsets = append(subsets, subsetOf(addr, nil, ready))
			}
			continue
		}
		for i := range svc.Spec.Ports {
			sp := &svc.Spec.Ports[i]
			port, err := endpointslice.FindPort(pod, sp)
			if err != nil {
				continue // the pod does not name this targetPort
			}
			subsets = append(subsets, subsetOf(addr, []corev1.EndpointPort{{
				Name: sp.Name, Port: int32(port), Protocol: sp.Protocol, AppProtocol: sp.AppProtocol,
			}}, ready))
		}
	}
	return RepackSubsets(subsets)
}

func subsetOf(addr corev1.EndpointAddress, ports []corev1.EndpointPort, ready bool) corev1.EndpointSubset {
	if ready {
		return corev1.EndpointSubset{Addresses: []corev1.EndpointAddress{addr}, Ports: ports}
	}
	return corev1.EndpointSubset{NotReadyAddresses: []corev1.EndpointAddress{addr}, Ports: ports}
}

// podAddress is pod's address in svc's Endpoints: its IP of the Service's primary family
// (inferred from the cluster IP, else the pod's IP, when the Service does not list its
// families), its node, a reference to it, and its hostname when the pod names one under the
// Service as its subdomain.
func podAddress(svc *corev1.Service, pod *corev1.Pod) (corev1.EndpointAddress, bool) {
	var ipv6 bool
	switch {
	case len(svc.Spec.IPFamilies) > 0:
		ipv6 = svc.Spec.IPFamilies[0] == corev1.IPv6Protocol
	case svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != corev1.ClusterIPNone:
		ipv6 = utilnet.IsIPv6String(svc.Spec.ClusterIP)
	default:
		ipv6 = utilnet.IsIPv6String(pod.Status.PodIP)
	}
	for _, podIP := range pod.Status.PodIPs {
		ip := utilnet.ParseIPSloppy(podIP.IP)
		if ip == nil || utilnet.IsIPv6(ip) != ipv6 {
			continue
		}
		nodeName := pod.Spec.NodeName
		addr := corev1.EndpointAddress{
			IP:        ip.String(), // canonical, whatever form the pod's status has
			NodeName:  &nodeName,
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		}
		if endpointsliceutil.ShouldSetHostname(pod, svc) {
			addr.Hostname = pod.Spec.Hostname
		}
		return addr, true
	}
	return corev1.EndpointAddress{}, false
}

// desiredEndpoints is the Endpoints svc should have given its subsets, built on current (nil
// when there is none): the subsets truncated to MaxCapacity, the Service's labels with
// LabelManagedBy and, for a headless Service, corev1.IsHeadlessService, current's other
// annotations with corev1.EndpointsOverCapacity and corev1.EndpointsLastChangeTriggerTime
// (unset when triggerTime is zero). It returns nil when current already has these subsets,
// labels and capacity annotation: a changed trigger time alone is not worth a write.
func desiredEndpoints(svc *corev1.Service, subsets []corev1.EndpointSubset, current *corev1.Endpoints, triggerTime time.Time) *corev1.Endpoints {
	want := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: svc.Namespace, Name: svc.Name}}
	if current != nil {
		want = current.DeepCopy()
	}
	want.Subsets = subsets
	over := truncate(&want.Subsets)

	want.Labels = maps.Clone(svc.Labels)
	if want.Labels == nil {
		want.Labels = map[string]string{}
	}
	delete(want.Labels, corev1.IsHeadlessService)
	if svc.Spec.ClusterIP == corev1.ClusterIPNone || svc.Spec.ClusterIP == "" {
		want.Labels[corev1.IsHeadlessService] = ""
	}
	want.Labels[LabelManagedBy] = ControllerName

	if want.Annotations == nil {
		want.Annotations = map[string]string{}
	}
	delete(want.Annotations, corev1.EndpointsOverCapacity)
	if over {
		want.Annotations[corev1.EndpointsOverCapacity] = Truncated
	}
	if current != nil && subsetsEqual(current, want.Subsets) && maps.Equal(current.Labels, want.Labels) &&
		current.Annotations[corev1.EndpointsOverCapacity] == want.Annotations[corev1.EndpointsOverCapacity] {
		return nil
	}
	delete(want.Annotations, corev1.EndpointsLastChangeTriggerTime)
	if !triggerTime.IsZero() {
		want.Annotations[corev1.EndpointsLastChangeTriggerTime] = triggerTime.UTC().Format(time.RFC3339Nano)
	}
	return want
}

// truncate cuts subsets down to MaxCapacity addresses and reports whether it had to. Ready
// addresses go first: not-ready ones are cut when there is no room left for them all, and
// all of them go when the ready ones alone are too many. What is kept of the addresses cut
// is shared out among the subsets in proportion to how many each had; a subset left without
// any address is dropped (the API server refuses one).
func truncate(subsets *[]corev1.EndpointSubset) bool {
	ready, notReady := 0, 0
	for _, ss := range *subsets {
		ready += len(ss.Addresses)
		notReady += len(ss.NotReadyAddresses)
	}
	if ready+notReady <= MaxCapacity {
		return false
	}
	readyOnly := ready > MaxCapacity
	budget, total := MaxCapacity-ready, notReady
	if readyOnly {
		budget, total = MaxCapacity, ready
	}
	left := budget
	kept := (*subsets)[:0]
	for _, ss := range *subsets {
		list := &ss.NotReadyAddresses
		if readyOnly {
			list = &ss.Addresses
			ss.NotReadyAddresses = nil
		}
		share := min((len(*list)*budget+total-1)/total, left) // rounded up
		if len(*list) > share {
			*list = (*list)[:share]
		}
		left -= len(*list)
		if len(ss.Addresses)+len(ss.NotReadyAddresses) > 0 {
			kept = append(kept, ss)
		}
	}
	*subsets = kept
	return true
}

// ignoreResourceVersion compares object references without their resourceVersion, which a
// pod's every update changes and its address does not depend on; nil and empty slices are
// equal.
var ignoreResourceVersion = conversion.EqualitiesOrDie(func(a, b corev1.ObjectReference) bool {
	a.ResourceVersion, b.ResourceVersion = "", ""
	return a == b
})

// subsetsEqual reports whether current has subsets, as they are or once repacked (another
// writer may have laid them out otherwise).
func subsetsEqual(current *corev1.Endpoints, subsets []corev1.EndpointSubset) bool {
	return ignoreResourceVersion.DeepEqual(current.Subsets, subsets) ||
		ignoreResourceVersion.DeepEqual(RepackSubsets(current.Subsets), subsets)
}
