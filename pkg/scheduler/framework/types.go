package framework

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

// PodInfo is a pod with what the scheduler derives from it once: its affinity terms parsed
// into selectors, and its requests added up.
type PodInfo struct {
	Pod                        *v1.Pod
	RequiredAffinityTerms      []AffinityTerm
	RequiredAntiAffinityTerms  []AffinityTerm
	PreferredAffinityTerms     []WeightedAffinityTerm
	PreferredAntiAffinityTerms []WeightedAffinityTerm
	// Requests is what the pod asks of a node (PodRequests).
	Requests *Resource
	// NonZeroMilliCPU and NonZeroMemory count 100m and 200Mi for containers that ask for
	// nothing, for scoring.
	NonZeroMilliCPU, NonZeroMemory int64
	// ParseError is set when a term's selector did not parse; the pod cannot be scheduled.
	ParseError error
}

// AffinityTerm is a pod (anti-)affinity term, ready to match.
type AffinityTerm struct {
	Namespaces        sets.Set[string]
	Selector          labels.Selector
	TopologyKey       string
	NamespaceSelector labels.Selector
}

// Matches reports whether pod (in a namespace with nsLabels) is one the term selects.
func (t *AffinityTerm) Matches(pod *v1.Pod, nsLabels labels.Set) bool {
	if t.Namespaces.Has(pod.Namespace) || t.NamespaceSelector.Matches(nsLabels) {
		return t.Selector.Matches(labels.Set(pod.Labels))
	}
	return false
}

// WeightedAffinityTerm is a preferred term with its weight.
type WeightedAffinityTerm struct {
	AffinityTerm
	Weight int32
}

// NewPodInfo derives a PodInfo.
func NewPodInfo(pod *v1.Pod) *PodInfo {
	pi := &PodInfo{}
	pi.Update(pod)
	return pi
}

// Update recomputes the PodInfo for a new version of the pod.
func (pi *PodInfo) Update(pod *v1.Pod) {
	if pi.Pod != nil && pi.Pod.UID == pod.UID && pi.Pod.Generation == pod.Generation && pi.Pod.Generation != 0 && pi.Requests != nil {
		// The spec, and so everything derived from it, is unchanged.
		pi.Pod = pod
		return
	}
	*pi = PodInfo{Pod: pod}
	var errs []error
	if a := pod.Spec.Affinity; a != nil {
		if a.PodAffinity != nil {
			pi.RequiredAffinityTerms = affinityTerms(pod, a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, &errs)
			pi.PreferredAffinityTerms = weightedTerms(pod, a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution, &errs)
		}
		if a.PodAntiAffinity != nil {
			pi.RequiredAntiAffinityTerms = affinityTerms(pod, a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, &errs)
			pi.PreferredAntiAffinityTerms = weightedTerms(pod, a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution, &errs)
		}
	}
	if len(errs) > 0 {
		pi.ParseError = fmt.Errorf("parsing the pod's affinity terms: %v", errs)
	}
	pi.Requests = NewResource(PodRequests(pod))
	pi.NonZeroMilliCPU, pi.NonZeroMemory = podNonZeroRequests(pod)
}

func affinityTerms(pod *v1.Pod, terms []v1.PodAffinityTerm, errs *[]error) []AffinityTerm {
	out := make([]AffinityTerm, 0, len(terms))
	for i := range terms {
		t, err := newAffinityTerm(pod, &terms[i])
		if err != nil {
			*errs = append(*errs, err)
			continue
		}
		out = append(out, t)
	}
	return out
}

func weightedTerms(pod *v1.Pod, terms []v1.WeightedPodAffinityTerm, errs *[]error) []WeightedAffinityTerm {
	out := make([]WeightedAffinityTerm, 0, len(terms))
	for i := range terms {
		t, err := newAffinityTerm(pod, &terms[i].PodAffinityTerm)
		if err != nil {
			*errs = append(*errs, err)
			continue
		}
		out = append(out, WeightedAffinityTerm{AffinityTerm: t, Weight: terms[i].Weight})
	}
	return out
}

// newAffinityTerm parses a term. With neither namespaces nor a namespace selector it means the
// pod's own namespace; an empty namespace selector means all namespaces.
func newAffinityTerm(pod *v1.Pod, term *v1.PodAffinityTerm) (AffinityTerm, error) {
	selector, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
	if err != nil {
		return AffinityTerm{}, err
	}
	namespaces := sets.New(term.Namespaces...)
	if len(term.Namespaces) == 0 && term.NamespaceSelector == nil {
		namespaces.Insert(pod.Namespace)
	}
	nsSelector := labels.Nothing()
	if term.NamespaceSelector != nil {
		nsSelector, err = metav1.LabelSelectorAsSelector(term.NamespaceSelector)
		if err != nil {
			return AffinityTerm{}, err
		}
	}
	return AffinityTerm{Namespaces: namespaces, Selector: selector, TopologyKey: term.TopologyKey, NamespaceSelector: nsSelector}, nil
}

// QueuedPodInfo is a pod in the scheduling queue, with its history there.
type QueuedPodInfo struct {
	*PodInfo
	// Timestamp is when the pod last entered the queue.
	Timestamp time.Time
	// Attempts counts scheduling attempts.
	Attempts int
	// InitialAttemptTimestamp is when it was first popped (the SLI starts at creation).
	InitialAttemptTimestamp *time.Time
	// UnschedulablePlugins are the plugins that rejected it last time; only events those
	// plugins care about move it back to activeQ.
	UnschedulablePlugins sets.Set[string]
	// PendingPlugins are plugins that answered Pending last time.
	PendingPlugins sets.Set[string]
	// GatingPlugin is the PreEnqueue plugin that keeps the pod out of activeQ, if any.
	GatingPlugin string
	// BackoffExpiration is when the pod may leave backoffQ.
	BackoffExpiration time.Time
}

// DeepCopy copies the queue bookkeeping; the pod itself is shared.
func (q *QueuedPodInfo) DeepCopy() *QueuedPodInfo {
	out := *q
	pi := *q.PodInfo
	out.PodInfo = &pi
	out.UnschedulablePlugins = q.UnschedulablePlugins.Clone()
	out.PendingPlugins = q.PendingPlugins.Clone()
	return &out
}

// ImageStateSummary is what the cluster knows of one image: its size and how many nodes have it.
type ImageStateSummary struct {
	Size     int64
	NumNodes int
}

// ProtocolPort is a host port.
type ProtocolPort struct {
	Protocol string
	Port     int32
}

// HostPortInfo is the host ports in use on a node, by host IP.
type HostPortInfo map[string]map[ProtocolPort]struct{}

const defaultHostIP = "0.0.0.0"

func sanitize(ip, protocol string) (string, string) {
	if ip == "" {
		ip = defaultHostIP
	}
	if protocol == "" {
		protocol = string(v1.ProtocolTCP)
	}
	return ip, protocol
}

// Add records a port in use.
func (h HostPortInfo) Add(ip, protocol string, port int32) {
	ip, protocol = sanitize(ip, protocol)
	if h[ip] == nil {
		h[ip] = map[ProtocolPort]struct{}{}
	}
	h[ip][ProtocolPort{Protocol: protocol, Port: port}] = struct{}{}
}

// Remove forgets a port.
func (h HostPortInfo) Remove(ip, protocol string, port int32) {
	ip, protocol = sanitize(ip, protocol)
	if m, ok := h[ip]; ok {
		delete(m, ProtocolPort{Protocol: protocol, Port: port})
		if len(m) == 0 {
			delete(h, ip)
		}
	}
}

// Len counts the ports.
func (h HostPortInfo) Len() int {
	n := 0
	for _, m := range h {
		n += len(m)
	}
	return n
}

// CheckConflict reports whether ip:port/protocol collides with a port in use; 0.0.0.0 collides
// with every address.
func (h HostPortInfo) CheckConflict(ip, protocol string, port int32) bool {
	if port <= 0 {
		return false
	}
	ip, protocol = sanitize(ip, protocol)
	pp := ProtocolPort{Protocol: protocol, Port: port}
	if ip == defaultHostIP {
		for _, m := range h {
			if _, ok := m[pp]; ok {
				return true
			}
		}
		return false
	}
	for _, key := range []string{ip, defaultHostIP} {
		if m, ok := h[key]; ok {
			if _, ok := m[pp]; ok {
				return true
			}
		}
	}
	return false
}

// PodKey identifies a pod across its versions.
func PodKey(pod *v1.Pod) types.UID { return pod.UID }
