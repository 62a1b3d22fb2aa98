package node

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// objectKind is the kind of an object the graph knows.
type objectKind uint8

const (
	podKind objectKind = iota
	secretKind
	configMapKind
	serviceAccountKind
	pvcKind
	pvKind
	resourceClaimKind
	volumeAttachmentKind
	resourceSliceKind
	podCertificateRequestKind
)

// objectKey names an object; cluster-scoped objects have no namespace.
type objectKey struct {
	kind            objectKind
	namespace, name string
}

// boundPod is what the graph remembers of a pod bound to a node.
type boundPod struct {
	node string
	refs []objectKey
}

// boundPV is what the graph remembers of a persistent volume bound to a claim.
type boundPV struct {
	claim   objectKey
	secrets []objectKey // the ones the node agent uses
}

// Graph is upstream's node authorizer graph (node ← pod ← secret, configmap, service account,
// pvc ← pv ← secret, resource claim; node ← volume attachment, resource slice, pod certificate
// request) kept as reference-counted indexes, so that a question costs a few map look-ups,
// not a walk: for every object a bound pod references, how many pods on each node reference
// it. Informer event handlers (AddGraphEventHandlers) keep it current.
type Graph struct {
	mu   sync.RWMutex
	pods map[objectKey]boundPod
	// nodesOf counts, per referenced object and node, the pods on that node referencing it.
	nodesOf map[objectKey]map[string]int
	pvs     map[string]boundPV
	// pvsOfSecret are the bound PVs naming a secret.
	pvsOfSecret map[objectKey]map[string]struct{}
	// direct are the objects that name their node themselves.
	direct map[objectKey]string
}

// NewGraph returns an empty graph.
func NewGraph() *Graph {
	return &Graph{
		pods:        map[objectKey]boundPod{},
		nodesOf:     map[objectKey]map[string]int{},
		pvs:         map[string]boundPV{},
		pvsOfSecret: map[objectKey]map[string]struct{}{},
		direct:      map[objectKey]string{},
	}
}

// AddPod records (or replaces) a pod bound to a node; one not bound yet is ignored.
func (g *Graph) AddPod(pod *corev1.Pod) {
	if pod.Spec.NodeName == "" {
		return
	}
	refs := podRefs(pod)
	key := objectKey{kind: podKind, namespace: pod.Namespace, name: pod.Name}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.deletePodLocked(key)
	g.pods[key] = boundPod{node: pod.Spec.NodeName, refs: refs}
	for _, r := range refs {
		counts := g.nodesOf[r]
		if counts == nil {
			counts = map[string]int{}
			g.nodesOf[r] = counts
		}
		counts[pod.Spec.NodeName]++
	}
}

// DeletePod forgets a pod.
func (g *Graph) DeletePod(namespace, name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.deletePodLocked(objectKey{kind: podKind, namespace: namespace, name: name})
}

func (g *Graph) deletePodLocked(key objectKey) {
	old, ok := g.pods[key]
	if !ok {
		return
	}
	delete(g.pods, key)
	for _, r := range old.refs {
		counts := g.nodesOf[r]
		if counts[old.node]--; counts[old.node] <= 0 {
			delete(counts, old.node)
		}
		if len(counts) == 0 {
			delete(g.nodesOf, r)
		}
	}
}

// AddPV records (or replaces) a persistent volume; one bound to no claim grants nothing.
func (g *Graph) AddPV(pv *corev1.PersistentVolume) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.deletePVLocked(pv.Name)
	if pv.Spec.ClaimRef == nil {
		return
	}
	b := boundPV{claim: objectKey{kind: pvcKind, namespace: pv.Spec.ClaimRef.Namespace, name: pv.Spec.ClaimRef.Name}}
	for _, s := range pvSecrets(pv) {
		if !s.nodeVisible || s.name == "" {
			continue
		}
		k := objectKey{kind: secretKind, namespace: s.namespace, name: s.name}
		b.secrets = append(b.secrets, k)
		if g.pvsOfSecret[k] == nil {
			g.pvsOfSecret[k] = map[string]struct{}{}
		}
		g.pvsOfSecret[k][pv.Name] = struct{}{}
	}
	g.pvs[pv.Name] = b
}

// DeletePV forgets a persistent volume.
func (g *Graph) DeletePV(name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.deletePVLocked(name)
}

func (g *Graph) deletePVLocked(name string) {
	old, ok := g.pvs[name]
	if !ok {
		return
	}
	delete(g.pvs, name)
	for _, s := range old.secrets {
		delete(g.pvsOfSecret[s], name)
		if len(g.pvsOfSecret[s]) == 0 {
			delete(g.pvsOfSecret, s)
		}
	}
}

// setNodeOf records the node of an object that names it itself (a VolumeAttachment's
// spec.nodeName, a ResourceSlice's, a PodCertificateRequest's); an empty node forgets it.
func (g *Graph) setNodeOf(kind objectKind, namespace, name, node string) {
	key := objectKey{kind: kind, namespace: namespace, name: name}
	g.mu.Lock()
	defer g.mu.Unlock()
	if node == "" {
		delete(g.direct, key)
		return
	}
	g.direct[key] = node
}

// hasPathFrom reports whether the object leads to the node.
func (g *Graph) hasPathFrom(node string, key objectKey) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	switch key.kind {
	case podKind:
		p, ok := g.pods[key]
		return ok && p.node == node
	case pvKind:
		pv, ok := g.pvs[key.name]
		return ok && g.nodesOf[pv.claim][node] > 0
	case volumeAttachmentKind, resourceSliceKind, podCertificateRequestKind:
		return g.direct[key] == node
	}
	if g.nodesOf[key][node] > 0 {
		return true
	}
	if key.kind == secretKind {
		for pv := range g.pvsOfSecret[key] {
			if g.nodesOf[g.pvs[pv].claim][node] > 0 {
				return true
			}
		}
	}
	return false
}
