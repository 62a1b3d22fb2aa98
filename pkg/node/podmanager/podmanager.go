// Package podmanager is the node agent's podManager, as seed 003 describes it: "podManager子模块
// 负责管理这台机器上的pod信息、pod和mirrorPod之间的对应关系" — it holds the pods this node should
// run (from the config sources), and maps static pods to their mirror pods and back. Every
// managed pod is in it; a pod missing from it is considered deleted.
//
// A static pod comes from a file or a URL; the API server knows it only through its mirror pod,
// which has the same full name (name_namespace), another UID, and the annotation
// kubernetes.io/config.mirror set to the static pod's config hash. Mirror pods are kept apart:
// GetPods and the lookups by UID or name return regular (non-mirror) pods only.
package podmanager

import (
	"maps"
	"slices"
	"sort"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	nodetypes "github.com/berth-cluster/berth/pkg/node/types"
)

// Manager holds the node's desired pods. It is safe for concurrent use.
type Manager struct {
	mu sync.RWMutex
	// Regular (non-mirror) pods, by UID and by full name.
	podByUID      map[types.UID]*v1.Pod
	podByFullName map[string]*v1.Pod
	// Mirror pods, by UID and by full name.
	mirrorPodByUID      map[types.UID]*v1.Pod
	mirrorPodByFullName map[string]*v1.Pod
}

// New returns an empty Manager.
func New() *Manager {
	m := &Manager{}
	m.SetPods(nil)
	return m
}

// SetPods replaces every pod with pods.
func (m *Manager) SetPods(pods []*v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.podByUID = map[types.UID]*v1.Pod{}
	m.podByFullName = map[string]*v1.Pod{}
	m.mirrorPodByUID = map[types.UID]*v1.Pod{}
	m.mirrorPodByFullName = map[string]*v1.Pod{}
	for _, pod := range pods {
		m.set(pod)
	}
}

// AddPod adds (or replaces) a pod or a mirror pod.
func (m *Manager) AddPod(pod *v1.Pod) { m.UpdatePod(pod) }

// UpdatePod replaces a pod or a mirror pod (or adds it).
func (m *Manager) UpdatePod(pod *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.set(pod)
}

// set stores pod in the indexes. Caller holds mu.
func (m *Manager) set(pod *v1.Pod) {
	fullName := nodetypes.GetPodFullName(pod)
	if nodetypes.IsMirrorPod(pod) {
		m.mirrorPodByUID[pod.UID] = pod
		m.mirrorPodByFullName[fullName] = pod
		return
	}
	m.podByUID[pod.UID] = pod
	m.podByFullName[fullName] = pod
}

// RemovePod forgets a pod or a mirror pod.
func (m *Manager) RemovePod(pod *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	fullName := nodetypes.GetPodFullName(pod)
	if nodetypes.IsMirrorPod(pod) {
		delete(m.mirrorPodByUID, pod.UID)
		if p, ok := m.mirrorPodByFullName[fullName]; ok && p.UID == pod.UID {
			delete(m.mirrorPodByFullName, fullName)
		}
		return
	}
	delete(m.podByUID, pod.UID)
	if p, ok := m.podByFullName[fullName]; ok && p.UID == pod.UID {
		delete(m.podByFullName, fullName)
	}
}

// GetPods returns the regular pods, ordered by namespace, name and UID.
func (m *Manager) GetPods() []*v1.Pod {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return sorted(m.podByUID)
}

// Pods returns the regular pods in no order, for the sync loop's scan every second and
// admission, where order does not matter and sorting would be most of the cost.
func (m *Manager) Pods() []*v1.Pod {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return slices.Collect(maps.Values(m.podByUID))
}

// GetPodsAndMirrorPods returns the regular pods, the mirror pods, and the full names of the
// mirror pods whose static pod is gone (orphans to delete from the API).
func (m *Manager) GetPodsAndMirrorPods() (pods, mirrorPods []*v1.Pod, orphanedMirrorPodFullnames []string) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for fullName := range m.mirrorPodByFullName {
		if _, ok := m.podByFullName[fullName]; !ok {
			orphanedMirrorPodFullnames = append(orphanedMirrorPodFullnames, fullName)
		}
	}
	sort.Strings(orphanedMirrorPodFullnames)
	return sorted(m.podByUID), sorted(m.mirrorPodByUID), orphanedMirrorPodFullnames
}

// GetPodByUID returns the regular pod with that UID.
func (m *Manager) GetPodByUID(uid types.UID) (*v1.Pod, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	pod, ok := m.podByUID[uid]
	return pod, ok
}

// GetPodByFullName returns the regular pod with that full name (name_namespace).
func (m *Manager) GetPodByFullName(podFullName string) (*v1.Pod, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	pod, ok := m.podByFullName[podFullName]
	return pod, ok
}

// GetPodByName returns the regular pod with that namespace and name.
func (m *Manager) GetPodByName(namespace, name string) (*v1.Pod, bool) {
	return m.GetPodByFullName(name + "_" + namespace)
}

// GetMirrorPodByPod returns the mirror pod of a static pod (the mirror pod of the same full
// name; IsMirrorPodOf tells whether it is up to date).
func (m *Manager) GetMirrorPodByPod(pod *v1.Pod) (*v1.Pod, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	mirror, ok := m.mirrorPodByFullName[nodetypes.GetPodFullName(pod)]
	return mirror, ok
}

// GetPodByMirrorPod returns the static pod of a mirror pod.
func (m *Manager) GetPodByMirrorPod(mirrorPod *v1.Pod) (*v1.Pod, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	pod, ok := m.podByFullName[nodetypes.GetPodFullName(mirrorPod)]
	return pod, ok
}

// GetPodAndMirrorPod completes a pod: given a regular pod it returns it and its mirror pod (or
// nil); given a mirror pod it returns its static pod (or nil), the mirror pod, and wasMirror.
func (m *Manager) GetPodAndMirrorPod(aPod *v1.Pod) (pod, mirrorPod *v1.Pod, wasMirror bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	fullName := nodetypes.GetPodFullName(aPod)
	if nodetypes.IsMirrorPod(aPod) {
		return m.podByFullName[fullName], aPod, true
	}
	return aPod, m.mirrorPodByFullName[fullName], false
}

// TranslatePodUID maps a mirror pod's UID to its static pod's UID; any other UID (including
// a mirror pod's whose static pod is gone) is returned as is.
func (m *Manager) TranslatePodUID(uid types.UID) types.UID {
	if uid == "" {
		return uid
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if mirror, ok := m.mirrorPodByUID[uid]; ok {
		if pod, ok := m.podByFullName[nodetypes.GetPodFullName(mirror)]; ok {
			return pod.UID
		}
	}
	return uid
}

// GetUIDTranslations returns the UID mappings: every static pod to its mirror pod's UID ("" if
// it has none yet) and every mirror pod with a static pod to that pod's UID.
func (m *Manager) GetUIDTranslations() (podToMirror, mirrorToPod map[types.UID]types.UID) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	podToMirror, mirrorToPod = map[types.UID]types.UID{}, map[types.UID]types.UID{}
	for uid, pod := range m.podByUID {
		if nodetypes.IsStaticPod(pod) {
			podToMirror[uid] = ""
		}
	}
	for uid, mirror := range m.mirrorPodByUID {
		if pod, ok := m.podByFullName[nodetypes.GetPodFullName(mirror)]; ok {
			mirrorToPod[uid] = pod.UID
			podToMirror[pod.UID] = uid
		}
	}
	return podToMirror, mirrorToPod
}

// IsMirrorPodOf reports whether mirrorPod is the up-to-date mirror of pod: the same full name,
// and its mirror annotation equal to the pod's config hash.
func IsMirrorPodOf(mirrorPod, pod *v1.Pod) bool {
	if pod.Name != mirrorPod.Name || pod.Namespace != mirrorPod.Namespace {
		return false
	}
	hash, ok := mirrorPod.Annotations[nodetypes.ConfigMirrorAnnotationKey]
	return ok && hash == pod.Annotations[nodetypes.ConfigHashAnnotationKey]
}

func sorted(byUID map[types.UID]*v1.Pod) []*v1.Pod {
	pods := slices.Collect(maps.Values(byUID))
	sort.Slice(pods, func(i, j int) bool {
		a, b := pods[i], pods[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.UID < b.UID
	})
	return pods
}
