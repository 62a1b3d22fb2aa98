package node

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/berth-cluster/berth/pkg/auth/rbac/bootstrappolicy"
)

// podOn is a pod bound to node that uses what mutate adds.
func podOn(name, node string, mutate func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name + "-uid")},
		Spec:       corev1.PodSpec{NodeName: node, ServiceAccountName: "default", Containers: []corev1.Container{{Name: "c", Image: "i"}}},
	}
	if mutate != nil {
		mutate(p)
	}
	return p
}

func secretVolume(secret string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "v-" + secret,
			VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}})
	}
}

var nodeA = &user.DefaultInfo{Name: "system:node:node-a", Groups: []string{user.NodesGroup, user.AllAuthenticated}}
var nodeB = &user.DefaultInfo{Name: "system:node:node-b", Groups: []string{user.NodesGroup, user.AllAuthenticated}}

type request struct {
	user                                        user.Info
	verb, group, resource, sub, namespace, name string
	fieldSelector                               string
	nonResourcePath                             string
}

func (r request) attributes(t *testing.T) authorizer.Attributes {
	a := authorizer.AttributesRecord{User: r.user, Verb: r.verb, APIGroup: r.group, APIVersion: "v1", Resource: r.resource,
		Subresource: r.sub, Namespace: r.namespace, Name: r.name, ResourceRequest: r.nonResourcePath == "", Path: r.nonResourcePath}
	if r.fieldSelector != "" {
		s, err := fields.ParseSelector(r.fieldSelector)
		if err != nil {
			t.Fatal(err)
		}
		a.FieldSelectorRequirements = s.Requirements()
	}
	return a
}

func check(t *testing.T, az *Authorizer, r request, want authorizer.Decision, wantReason string) {
	t.Helper()
	got, reason, err := az.Authorize(context.Background(), r.attributes(t))
	if err != nil {
		t.Fatal(err)
	}
	if got != want || (wantReason != "*" && reason != wantReason) {
		t.Errorf("%+v: got %v %q, want %v %q", r, got, reason, want, wantReason)
	}
}

const (
	allowed = authorizer.DecisionAllow
	none    = authorizer.DecisionNoOpinion
)

func TestSecretsFollowThePods(t *testing.T) {
	g := NewGraph()
	az := NewAuthorizer(g, nil)
	g.AddPod(podOn("a1", "node-a", secretVolume("only-a")))
	g.AddPod(podOn("b1", "node-b", secretVolume("only-b")))
	g.AddPod(podOn("b2", "node-b", secretVolume("shared")))
	g.AddPod(podOn("a2", "node-a", secretVolume("shared")))
	get := func(u user.Info, name string) request {
		return request{user: u, verb: "get", resource: "secrets", namespace: "ns", name: name}
	}
	noRelation := func(node string) string { return "no relationship found between node '" + node + "' and this object" }

	check(t, az, get(nodeA, "only-a"), allowed, "")
	check(t, az, get(nodeA, "only-b"), none, noRelation("node-a"))
	check(t, az, get(nodeB, "only-a"), none, noRelation("node-b"))
	check(t, az, get(nodeA, "shared"), allowed, "")
	check(t, az, get(nodeB, "shared"), allowed, "")
	check(t, az, get(nodeA, "unknown"), none, noRelation("node-a"))
	// Another namespace's secret of the same name is another secret.
	check(t, az, request{user: nodeA, verb: "get", resource: "secrets", namespace: "other", name: "only-a"}, none, noRelation("node-a"))
	// A watch of one secret (metadata.name=, which the request info turns into a name).
	check(t, az, request{user: nodeA, verb: "watch", resource: "secrets", namespace: "ns", name: "only-a"}, allowed, "")
	check(t, az, request{user: nodeA, verb: "list", resource: "secrets", namespace: "ns"}, none, "No Object name found")
	check(t, az, request{user: nodeA, verb: "list", resource: "secrets"}, none, "can only read namespaced object of this type")
	check(t, az, request{user: nodeA, verb: "update", resource: "secrets", namespace: "ns", name: "only-a"}, none, "can only read resources of this type")

	// The pod moves on: a deleted pod's secret is no longer the node's; one still used by
	// another pod of the node stays.
	g.DeletePod("ns", "a1")
	check(t, az, get(nodeA, "only-a"), none, noRelation("node-a"))
	g.DeletePod("ns", "b2")
	check(t, az, get(nodeB, "shared"), none, noRelation("node-b"))
	check(t, az, get(nodeA, "shared"), allowed, "")
	// Replacing a pod replaces its references.
	g.AddPod(podOn("a2", "node-a", secretVolume("new")))
	check(t, az, get(nodeA, "shared"), none, noRelation("node-a"))
	check(t, az, get(nodeA, "new"), allowed, "")
	// Left: a2's "new", b1's "only-b" and the service account "default" they share.
	if len(g.nodesOf) != 3 {
		t.Errorf("index holds %d objects after the deletes, want 3: %v", len(g.nodesOf), g.nodesOf)
	}
}

func TestEveryReferenceOfAPod(t *testing.T) {
	claim := "claim-x"
	pod := podOn("p", "node-a", func(p *corev1.Pod) {
		p.Spec.ServiceAccountName = "robot"
		p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "pull"}}
		p.Spec.InitContainers = []corev1.Container{{Name: "init", EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "init-envfrom"}}}}}}
		p.Spec.Containers[0].Env = []corev1.EnvVar{
			{Name: "A", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "env-secret"}, Key: "k"}}},
			{Name: "B", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "env-cm"}, Key: "k"}}},
		}
		p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "envfrom-cm"}}}}
		p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug",
			Env: []corev1.EnvVar{{Name: "C", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "debug-secret"}, Key: "k"}}}}}}}
		p.Spec.Volumes = []corev1.Volume{
			{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "vol-secret"}}},
			{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "vol-cm"}}}},
			{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj-secret"}}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}}},
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
			}}}},
			{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-claim"}}},
			{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}},
			{Name: "csi", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "d", NodePublishSecretRef: &corev1.LocalObjectReference{Name: "csi-secret"}}}},
		}
		p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &claim}}
		made := "p-gpu-abcde"
		p.Status.ResourceClaimStatuses = []corev1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: &made}}
	})
	g := NewGraph()
	az := NewAuthorizer(g, nil)
	g.AddPod(pod)
	for _, r := range []request{
		{verb: "get", resource: "secrets", name: "pull"},
		{verb: "get", resource: "secrets", name: "init-envfrom"},
		{verb: "get", resource: "secrets", name: "env-secret"},
		{verb: "get", resource: "secrets", name: "debug-secret"},
		{verb: "get", resource: "secrets", name: "vol-secret"},
		{verb: "get", resource: "secrets", name: "proj-secret"},
		{verb: "get", resource: "secrets", name: "csi-secret"},
		{verb: "get", resource: "configmaps", name: "env-cm"},
		{verb: "get", resource: "configmaps", name: "envfrom-cm"},
		{verb: "get", resource: "configmaps", name: "vol-cm"},
		{verb: "watch", resource: "configmaps", name: "kube-root-ca.crt"},
		{verb: "get", resource: "persistentvolumeclaims", name: "data-claim"},
		{verb: "get", resource: "persistentvolumeclaims", name: "p-scratch"},
		{verb: "patch", resource: "persistentvolumeclaims", sub: "status", name: "data-claim"},
		{verb: "get", group: "resource.k8s.io", resource: "resourceclaims", name: "p-gpu-abcde"},
		{verb: "create", resource: "serviceaccounts", sub: "token", name: "robot"},
		{verb: "get", resource: "serviceaccounts", name: "robot"},
		{verb: "get", resource: "pods", name: "p"},
	} {
		r.namespace = "ns"
		r.user = nodeA
		check(t, az, r, allowed, "")
		r.user = nodeB
		check(t, az, r, none, "no relationship found between node 'node-b' and this object")
	}
	check(t, az, request{user: nodeA, verb: "create", resource: "serviceaccounts", sub: "token", namespace: "ns", name: "default"}, none,
		"no relationship found between node 'node-a' and this object")
	check(t, az, request{user: nodeA, verb: "get", group: "resource.k8s.io", resource: "resourceclaims", namespace: "ns", name: "claim-x"}, none,
		"no relationship found between node 'node-a' and this object")
	check(t, az, request{user: nodeA, verb: "list", resource: "persistentvolumeclaims", namespace: "ns", name: "data-claim"}, none,
		"can only get individual resources of this type")
	check(t, az, request{user: nodeA, verb: "create", resource: "serviceaccounts", namespace: "ns", name: "robot"}, none,
		"can only create token subresource of serviceaccount")
	check(t, az, request{user: nodeA, verb: "create", resource: "serviceaccounts", sub: "token", namespace: "ns"}, none,
		"can only create tokens for individual service accounts")
}

func TestMirrorPodsGrantNothing(t *testing.T) {
	g := NewGraph()
	az := NewAuthorizer(g, nil)
	g.AddPod(podOn("static", "node-a", func(p *corev1.Pod) {
		p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"}
		secretVolume("s")(p)
	}))
	check(t, az, request{user: nodeA, verb: "get", resource: "secrets", namespace: "ns", name: "s"}, none, "*")
	check(t, az, request{user: nodeA, verb: "get", resource: "pods", namespace: "ns", name: "static"}, allowed, "")
}

func TestPersistentVolumes(t *testing.T) {
	g := NewGraph()
	az := NewAuthorizer(g, nil)
	g.AddPod(podOn("p", "node-a", func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "d", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "claim"}}}}
	}))
	g.AddPV(&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv1"}, Spec: corev1.PersistentVolumeSpec{
		ClaimRef: &corev1.ObjectReference{Namespace: "ns", Name: "claim"},
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "d",
			NodeStageSecretRef:         &corev1.SecretReference{Namespace: "secrets-ns", Name: "stage"},
			ControllerPublishSecretRef: &corev1.SecretReference{Namespace: "secrets-ns", Name: "controller"},
		}},
	}})
	getPV := request{verb: "get", resource: "persistentvolumes", name: "pv1"}
	stage := request{verb: "get", resource: "secrets", namespace: "secrets-ns", name: "stage"}
	controller := request{verb: "get", resource: "secrets", namespace: "secrets-ns", name: "controller"}
	for _, r := range []request{getPV, stage} {
		r.user = nodeA
		check(t, az, r, allowed, "")
		r.user = nodeB
		check(t, az, r, none, "*")
	}
	controller.user = nodeA
	check(t, az, controller, none, "*") // not the node's to read
	g.DeletePod("ns", "p")
	getPV.user = nodeA
	check(t, az, getPV, none, "*")
	g.AddPod(podOn("p", "node-a", func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "d", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "claim"}}}}
	}))
	g.DeletePV("pv1")
	stage.user = nodeA
	check(t, az, stage, none, "*")
	if len(g.pvsOfSecret) != 0 {
		t.Errorf("pvsOfSecret not emptied: %v", g.pvsOfSecret)
	}
}

func TestPodsAndNodes(t *testing.T) {
	g := NewGraph()
	az := NewAuthorizer(g, nil)
	g.AddPod(podOn("a1", "node-a", nil))
	for _, c := range []struct {
		r      request
		want   authorizer.Decision
		reason string
	}{
		{request{verb: "list", resource: "pods", fieldSelector: "spec.nodeName=node-a"}, allowed, ""},
		{request{verb: "watch", resource: "pods", fieldSelector: "spec.nodeName=node-a"}, allowed, ""},
		{request{verb: "list", resource: "pods", fieldSelector: "spec.nodeName=node-b"}, none, "can only list/watch pods with spec.nodeName field selector"},
		{request{verb: "list", resource: "pods", fieldSelector: "spec.nodeName!=node-a"}, none, "can only list/watch pods with spec.nodeName field selector"},
		{request{verb: "list", resource: "pods"}, none, "can only list/watch pods with spec.nodeName field selector"},
		{request{verb: "list", resource: "pods", namespace: "ns"}, none, "can only list/watch pods with spec.nodeName field selector"},
		{request{verb: "watch", resource: "pods", namespace: "ns", name: "a1"}, allowed, ""},
		{request{verb: "get", resource: "pods", namespace: "ns", name: "a1"}, allowed, ""},
		{request{verb: "get", resource: "pods", namespace: "ns", name: "other"}, none, "no relationship found between node 'node-a' and this object"},
		{request{verb: "get", resource: "pods", sub: "log", namespace: "ns", name: "a1"}, none, ""},
		{request{verb: "patch", resource: "pods", sub: "status", namespace: "ns", name: "b1"}, allowed, ""}, // NodeRestriction's to refuse
		{request{verb: "create", resource: "pods", sub: "eviction", namespace: "ns", name: "a1"}, allowed, ""},
		{request{verb: "create", resource: "pods", namespace: "ns"}, allowed, ""},
		{request{verb: "update", resource: "pods", namespace: "ns", name: "a1"}, none, ""},
		{request{verb: "get", resource: "nodes", name: "node-a"}, allowed, ""},
		{request{verb: "watch", resource: "nodes", name: "node-a"}, allowed, ""},
		{request{verb: "get", resource: "nodes", name: "node-b"}, none, "node 'node-a' cannot read 'node-b', only its own Node object"},
		{request{verb: "list", resource: "nodes"}, none, "node 'node-a' cannot read all nodes, only its own Node object"},
		{request{verb: "patch", resource: "nodes", sub: "status", name: "node-b"}, allowed, ""},
		{request{verb: "delete", resource: "nodes", name: "node-a"}, none, ""},
		{request{verb: "get", group: "coordination.k8s.io", resource: "leases", namespace: "kube-node-lease", name: "node-a"}, allowed, ""},
		{request{verb: "create", group: "coordination.k8s.io", resource: "leases", namespace: "kube-node-lease"}, allowed, ""},
		{request{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: "kube-node-lease", name: "node-b"}, none, "can only access node lease with the same name as the requesting node"},
		{request{verb: "get", group: "coordination.k8s.io", resource: "leases", namespace: "kube-system", name: "node-a"}, none, `can only access leases in the "kube-node-lease" system namespace`},
		{request{verb: "list", group: "coordination.k8s.io", resource: "leases", namespace: "kube-node-lease"}, none, "can only get, create, update, patch, or delete a node lease"},
		{request{verb: "list", group: "resource.k8s.io", resource: "resourceslices", fieldSelector: "spec.nodeName=node-a"}, allowed, ""},
		{request{verb: "list", group: "resource.k8s.io", resource: "resourceslices"}, none, "can only list/watch/deletecollection resourceslices with nodeName field selector"},
		{request{verb: "get", group: "storage.k8s.io", resource: "csinodes", name: "node-b"}, none, "can only access CSINode with the same name as the requesting node"},
		{request{verb: "get", group: "storage.k8s.io", resource: "volumeattachments", name: "va"}, none, "no relationship found between node 'node-a' and this object"},
	} {
		c.r.user = nodeA
		check(t, az, c.r, c.want, c.reason)
	}
	g.setNodeOf(volumeAttachmentKind, "", "va", "node-a")
	check(t, az, request{user: nodeA, verb: "get", group: "storage.k8s.io", resource: "volumeattachments", name: "va"}, allowed, "")
}

func TestRulesAndOtherUsers(t *testing.T) {
	rules := []rbacv1.PolicyRule{
		{Verbs: []string{"list", "watch"}, APIGroups: []string{""}, Resources: []string{"services"}},
		{Verbs: []string{"create"}, APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}},
	}
	g := NewGraph()
	g.AddPod(podOn("a1", "node-a", secretVolume("s")))
	az := NewAuthorizer(g, rules)
	check(t, az, request{user: nodeA, verb: "list", resource: "services"}, allowed, "")
	check(t, az, request{user: nodeA, verb: "create", group: "authorization.k8s.io", resource: "subjectaccessreviews"}, allowed, "")
	check(t, az, request{user: nodeA, verb: "delete", resource: "services", namespace: "ns", name: "x"}, none, "")
	// Not nodes: no opinion, whatever they ask.
	for _, u := range []user.Info{
		&user.DefaultInfo{Name: "system:node:node-a"}, // not in system:nodes
		&user.DefaultInfo{Name: "alice", Groups: []string{user.NodesGroup}},
		&user.DefaultInfo{Name: "system:masters"},
	} {
		check(t, az, request{user: u, verb: "get", resource: "secrets", namespace: "ns", name: "s"}, none, "")
		check(t, az, request{user: u, verb: "list", resource: "services"}, none, "")
	}
	check(t, az, request{user: &user.DefaultInfo{Name: "system:node:", Groups: []string{user.NodesGroup}}, verb: "get", resource: "secrets", namespace: "ns", name: "s"},
		none, `unknown node for user "system:node:"`)
}

// The populator follows a pod from pending to bound to deleted, through a real informer.
func TestGraphFollowsInformer(t *testing.T) {
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	g := NewGraph()
	synced, err := AddGraphEventHandlers(g, Informers{Pods: factory.Core().V1().Pods().Informer()})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	cache.WaitForCacheSync(stop, synced...)
	az := NewAuthorizer(g, nil)
	ctx := context.Background()
	getSecret := request{user: nodeA, verb: "get", resource: "secrets", namespace: "ns", name: "s"}
	eventually := func(want authorizer.Decision) {
		t.Helper()
		for i := 0; i < 200; i++ {
			if d, _, _ := az.Authorize(ctx, getSecret.attributes(t)); d == want {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("decision did not become %v", want)
	}
	pending := podOn("p", "", secretVolume("s"))
	if _, err := client.CoreV1().Pods("ns").Create(ctx, pending, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bound := pending.DeepCopy()
	bound.Spec.NodeName = "node-a"
	if _, err := client.CoreV1().Pods("ns").Update(ctx, bound, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(allowed)
	if err := client.CoreV1().Pods("ns").Delete(ctx, "p", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(none)
}

// A status update does not rebuild the pod's references; a new ephemeral container does.
func TestUpdatePodSkipsStatusWrites(t *testing.T) {
	g := NewGraph()
	old := podOn("p", "node-a", secretVolume("s"))
	updatePod(g, nil, old)
	// Take the pod out behind the populator's back: a skipped update leaves it out.
	g.DeletePod("ns", "p")
	status := old.DeepCopy()
	status.Status.Phase = corev1.PodRunning
	updatePod(g, old, status)
	if _, ok := g.pods[objectKey{kind: podKind, namespace: "ns", name: "p"}]; ok {
		t.Fatal("a status update rebuilt the pod")
	}
	debug := status.DeepCopy()
	debug.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "d",
		EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "debug"}}}}}}}
	updatePod(g, status, debug)
	if !g.hasPathFrom("node-a", objectKey{kind: secretKind, namespace: "ns", name: "debug"}) {
		t.Fatal("the ephemeral container's secret is not the node's")
	}
}

// nodeAgentRules are the node rules berth's node agent needs beyond its graph (a subset of
// system:node's): the services of its pods' environment, events, and the reviews the node
// API delegates to the API server.
var nodeAgentRules = []rbacv1.PolicyRule{
	{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{"services"}},
	{Verbs: []string{"create", "patch", "update"}, APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}},
	{Verbs: []string{"create"}, APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}},
	{Verbs: []string{"create"}, APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews", "localsubjectaccessreviews"}},
}

// Every call berth's node agent (pkg/node) makes with its own credentials is allowed for its
// own node and objects: registration and status, its Lease, its pods' watch, status, deletion
// and mirror pods, the secrets and configmaps its pods use, events and reviews.
func TestNodeAgentCallsAreAllowed(t *testing.T) {
	g := NewGraph()
	g.AddPod(podOn("web", "node-a", func(p *corev1.Pod) {
		p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "pull"}}
		p.Spec.Volumes = []corev1.Volume{{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}}}}}
	}))
	g.AddPod(podOn("static-node-a", "node-a", func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "h"} }))
	az := NewAuthorizer(g, nodeAgentRules)
	for _, r := range []request{
		// nodestatus: register, read back, watch its Node (metadata.name=node-a), patch status.
		{verb: "create", resource: "nodes"},
		{verb: "get", resource: "nodes", name: "node-a"},
		{verb: "list", resource: "nodes", name: "node-a"},
		{verb: "watch", resource: "nodes", name: "node-a"},
		{verb: "patch", resource: "nodes", sub: "status", name: "node-a"},
		// The Lease.
		{verb: "get", group: "coordination.k8s.io", resource: "leases", namespace: "kube-node-lease", name: "node-a"},
		{verb: "create", group: "coordination.k8s.io", resource: "leases", namespace: "kube-node-lease"},
		{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: "kube-node-lease", name: "node-a"},
		// config: the pods bound to it.
		{verb: "list", resource: "pods", fieldSelector: "spec.nodeName=node-a"},
		{verb: "watch", resource: "pods", fieldSelector: "spec.nodeName=node-a"},
		// status: read, patch status, delete when terminated.
		{verb: "get", resource: "pods", namespace: "ns", name: "web"},
		{verb: "patch", resource: "pods", sub: "status", namespace: "ns", name: "web"},
		{verb: "delete", resource: "pods", namespace: "ns", name: "web"},
		// mirror: create, read back, delete.
		{verb: "create", resource: "pods", namespace: "ns"},
		{verb: "get", resource: "pods", namespace: "ns", name: "static-node-a"},
		{verb: "delete", resource: "pods", namespace: "ns", name: "static-node-a"},
		// sync and volumes: pull secrets, configmaps.
		{verb: "get", resource: "secrets", namespace: "ns", name: "pull"},
		{verb: "get", resource: "configmaps", namespace: "ns", name: "conf"},
		// envvars: the services informer.
		{verb: "list", resource: "services"},
		{verb: "watch", resource: "services"},
		// events.
		{verb: "create", resource: "events", namespace: "ns"},
		{verb: "patch", resource: "events", namespace: "ns", name: "e"},
		// server: the node API's delegated authentication and authorization.
		{verb: "create", group: "authentication.k8s.io", resource: "tokenreviews"},
		{verb: "create", group: "authorization.k8s.io", resource: "subjectaccessreviews"},
		// podcertificate: create its pods' requests (NodeRestriction checks them), watch its
		// own, read the pod's service account.
		{verb: "create", group: "certificates.k8s.io", resource: "podcertificaterequests", namespace: "ns"},
		{verb: "list", group: "certificates.k8s.io", resource: "podcertificaterequests", fieldSelector: "spec.nodeName=node-a"},
		{verb: "watch", group: "certificates.k8s.io", resource: "podcertificaterequests", fieldSelector: "spec.nodeName=node-a"},
	} {
		r.user = nodeA
		check(t, az, r, allowed, "")
	}
	// clustertrustbundle: the informer of every bundle, and a bundle by name, which the
	// bootstrap policy's node rules grant (upstream's system:node too).
	az = NewAuthorizer(g, bootstrappolicy.NodeRules())
	for _, r := range []request{
		{verb: "list", group: "certificates.k8s.io", resource: "clustertrustbundles"},
		{verb: "watch", group: "certificates.k8s.io", resource: "clustertrustbundles"},
		{verb: "get", group: "certificates.k8s.io", resource: "clustertrustbundles", name: "example.com:s:1"},
	} {
		r.user = nodeA
		check(t, az, r, allowed, "")
	}
}
