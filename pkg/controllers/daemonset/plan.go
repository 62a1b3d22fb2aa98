package daemonset

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/berth-cluster/berth/pkg/controllers/podcontrol"
)

// The planner is upstream's manage and rollingUpdate (daemon_controller.go, update.go) as
// pure functions of the DaemonSet, the nodes, and the claimed pods by node. A sync first
// plans the core loop (planManage); only when that has nothing to do (upstream: when the
// expectations it just set are already satisfied) does it plan the rolling update
// (planRolling). Status comes from the same snapshot (planStatus).

// view is what the planners read.
type view struct {
	ds    *appsv1.DaemonSet
	nodes []*corev1.Node
	// podsByNode are the claimed pods by target node, without those terminal and being
	// deleted.
	podsByNode map[string][]*corev1.Pod
	hash       string
	now        time.Time
	elig       eligibility
}

func newView(ds *appsv1.DaemonSet, nodes []*corev1.Node, pods []*corev1.Pod, hash string, now time.Time) view {
	byNode := map[string][]*corev1.Pod{}
	for _, pod := range pods {
		if isTerminal(pod) && pod.DeletionTimestamp != nil {
			continue
		}
		node, err := targetNode(pod)
		if err != nil {
			continue // not a pod this controller made
		}
		byNode[node] = append(byNode[node], pod)
	}
	return view{ds: ds, nodes: nodes, podsByNode: byNode, hash: hash, now: now, elig: newEligibility(ds)}
}

func isTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded
}

// manage is the core loop's plan.
type manage struct {
	// create are the nodes that need a daemon pod.
	create []string
	// delete are the pods to delete: excess, on nodes that no longer want them, Succeeded,
	// and unbound pods for nodes that are gone.
	delete []*corev1.Pod
	// failed are the Failed pods on nodes that keep their daemon: the sync deletes each
	// unless its node's back-off holds it (and events it, FailedDaemonPod).
	failed []*corev1.Pod
	// succeeded are the Succeeded pods among delete, evented SucceededDaemonPod.
	succeeded []*corev1.Pod
}

func (m manage) empty() bool {
	return len(m.create) == 0 && len(m.delete) == 0 && len(m.failed) == 0
}

// planManage is upstream's manage: per node, podsShouldBeOnNode.
func planManage(v view) manage {
	var m manage
	seen := make(map[string]bool, len(v.nodes))
	for _, node := range v.nodes {
		seen[node.Name] = true
		v.planNode(node, &m)
	}
	// Unbound pods for nodes that are gone will never be scheduled.
	for name, pods := range v.podsByNode {
		if seen[name] {
			continue
		}
		for _, pod := range pods {
			if pod.Spec.NodeName == "" {
				m.delete = append(m.delete, pod)
			}
		}
	}
	return m
}

func (v view) planNode(node *corev1.Node, m *manage) {
	shouldRun, shouldContinue := v.elig.shouldRun(node)
	pods, exists := v.podsByNode[node.Name]
	switch {
	case shouldRun && !exists:
		m.create = append(m.create, node.Name)
	case shouldContinue:
		var running []*corev1.Pod
		for _, pod := range pods {
			switch {
			case pod.DeletionTimestamp != nil:
			case pod.Status.Phase == corev1.PodFailed:
				m.failed = append(m.failed, pod)
			case pod.Status.Phase == corev1.PodSucceeded:
				m.delete = append(m.delete, pod)
				m.succeeded = append(m.succeeded, pod)
			default:
				running = append(running, pod)
			}
		}
		if !allowsSurge(v.ds) {
			// One daemon pod per node: the oldest stays. A node whose only pod failed gets a
			// new one once it is gone.
			if len(running) > 1 {
				sortPods(running)
				m.delete = append(m.delete, running[1:]...)
			}
			return
		}
		if len(running) <= 1 {
			if len(running) == 0 && shouldRun {
				m.create = append(m.create, node.Name)
			}
			return
		}
		// With surge, a node may briefly run the oldest old pod and the oldest new one; the
		// old one goes once the new one is available or it is not ready itself.
		sortPods(running)
		var oldestNew, oldestOld *corev1.Pod
		for _, pod := range running {
			if pod.Labels[appsv1.ControllerRevisionHashLabelKey] == v.hash {
				if oldestNew == nil {
					oldestNew = pod
					continue
				}
			} else if oldestOld == nil {
				oldestOld = pod
				continue
			}
			m.delete = append(m.delete, pod)
		}
		if oldestNew != nil && oldestOld != nil &&
			(!podcontrol.IsPodReady(oldestOld) || podcontrol.IsPodAvailable(oldestNew, v.ds.Spec.MinReadySeconds, v.now)) {
			m.delete = append(m.delete, oldestOld)
		}
	case exists:
		// The node no longer wants the daemon (an untolerated NoExecute taint, a selector
		// that no longer matches).
		for _, pod := range pods {
			if pod.DeletionTimestamp == nil {
				m.delete = append(m.delete, pod)
			}
		}
	}
}

// rolling is the rolling update's plan.
type rolling struct {
	create []string
	delete []*corev1.Pod
}

// updatedPods is a node's new and old pod (upstream's findUpdatedPodsOnNode); ok is false
// when it has more than one of either, for the core loop to resolve first.
func (v view) updatedPods(pods []*corev1.Pod) (newPod, oldPod *corev1.Pod, ok bool) {
	gen := templateGeneration(v.ds)
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		if isUpdated(pod, v.hash, gen) {
			if newPod != nil {
				return nil, nil, false
			}
			newPod = pod
		} else {
			if oldPod != nil {
				return nil, nil, false
			}
			oldPod = pod
		}
	}
	return newPod, oldPod, true
}

// planRolling is upstream's rollingUpdate: without surge, delete old pods (unavailable ones
// always, others while fewer than maxUnavailable nodes are unavailable) for the core loop to
// replace; with surge, create new pods beside old ones (at most maxSurge at once) and delete
// each old pod once its new one is available.
func planRolling(v view) (rolling, error) {
	ds := v.ds
	minReady := ds.Spec.MinReadySeconds
	available := func(p *corev1.Pod) bool { return podcontrol.IsPodAvailable(p, minReady, v.now) }

	// Every node that wants the daemon counts, with or without a pod.
	byNode := make(map[string][]*corev1.Pod, len(v.podsByNode))
	for k, pods := range v.podsByNode {
		byNode[k] = pods
	}
	desired := 0
	nodes := make(map[string]*corev1.Node, len(v.nodes))
	for _, node := range v.nodes {
		nodes[node.Name] = node
		if run, _ := v.elig.shouldRun(node); run {
			desired++
			if _, ok := byNode[node.Name]; !ok {
				byNode[node.Name] = nil
			}
		}
	}
	maxUnavailable, err := unavailableCount(ds, desired)
	if err != nil {
		return rolling{}, err
	}
	maxSurge, err := surgeCount(ds, desired)
	if err != nil {
		return rolling{}, err
	}
	if desired > 0 && maxUnavailable == 0 && maxSurge == 0 {
		maxUnavailable = 1 // validation forbids both 0; accept unavailability
	}
	// Map order would make the plan random; upstream ranges over a map too, so any order is
	// faithful, and the node list's order makes it repeatable.
	names := make([]string, 0, len(byNode))
	for _, node := range v.nodes {
		if _, ok := byNode[node.Name]; ok {
			names = append(names, node.Name)
		}
	}
	for name := range byNode {
		if nodes[name] == nil {
			names = append(names, name)
		}
	}

	var r rolling
	if maxSurge == 0 {
		unavailable := 0
		var allowed, candidates []*corev1.Pod
		for _, name := range names {
			newPod, oldPod, ok := v.updatedPods(byNode[name])
			switch {
			case !ok:
				unavailable++
			case (oldPod == nil) == (newPod == nil):
				unavailable++ // no pod yet, or both while the old one terminates
			case newPod != nil:
				if !available(newPod) {
					unavailable++
				}
			case !available(oldPod):
				allowed = append(allowed, oldPod)
				unavailable++
			case unavailable < maxUnavailable:
				candidates = append(candidates, oldPod)
			}
		}
		remaining := min(max(maxUnavailable-unavailable, 0), len(candidates))
		r.delete = append(allowed, candidates[:remaining]...)
		return r, nil
	}

	var shouldNotRun []*corev1.Pod
	var allowedNodes, candidateNames []string
	surging, numAvailable := 0, 0
	for _, name := range names {
		newPod, oldPod, ok := v.updatedPods(byNode[name])
		if !ok {
			surging++
			continue
		}
		if oldPod != nil && available(oldPod) || oldPod == nil && newPod != nil && available(newPod) {
			numAvailable++
		}
		node := nodes[name]
		switch {
		case oldPod == nil:
			// Nothing to replace; the core loop creates a missing pod.
		case newPod == nil:
			run := false
			if node != nil {
				run, _ = v.elig.shouldRun(node)
			}
			switch {
			case !available(oldPod) && !run:
				r.delete = append(r.delete, oldPod)
			case !available(oldPod):
				allowedNodes = append(allowedNodes, name)
			case !run:
				shouldNotRun = append(shouldNotRun, oldPod)
			case surging < maxSurge:
				candidateNames = append(candidateNames, name)
			}
		default:
			if !available(newPod) {
				surging++
				continue
			}
			r.delete = append(r.delete, oldPod)
		}
	}
	// Old pods on nodes that no longer want them go only while enough pods are available.
	if deletable := min(numAvailable-desired, len(shouldNotRun)); deletable > 0 {
		r.delete = append(r.delete, shouldNotRun[:deletable]...)
	}
	remaining := min(max(maxSurge-surging, 0), len(candidateNames))
	r.create = append(allowedNodes, candidateNames[:remaining]...)
	return r, nil
}

// planStatus is upstream's updateDaemonSetStatus counts.
func planStatus(v view, observedGeneration int64, collisionCount *int32) appsv1.DaemonSetStatus {
	ds := v.ds
	s := appsv1.DaemonSetStatus{ObservedGeneration: observedGeneration, CollisionCount: collisionCount,
		Conditions: ds.Status.Conditions}
	gen := templateGeneration(ds)
	for _, node := range v.nodes {
		run, _ := v.elig.shouldRun(node)
		pods := v.podsByNode[node.Name]
		if !run {
			if len(pods) > 0 {
				s.NumberMisscheduled++
			}
			continue
		}
		s.DesiredNumberScheduled++
		if len(pods) == 0 {
			continue
		}
		s.CurrentNumberScheduled++
		sorted := append([]*corev1.Pod(nil), pods...)
		sortPods(sorted)
		pod := sorted[0]
		if podcontrol.IsPodReady(pod) {
			s.NumberReady++
			if podcontrol.IsPodAvailable(pod, ds.Spec.MinReadySeconds, v.now) {
				s.NumberAvailable++
			}
		}
		if isUpdated(pod, v.hash, gen) {
			s.UpdatedNumberScheduled++
		}
	}
	s.NumberUnavailable = s.DesiredNumberScheduled - s.NumberAvailable
	return s
}
