package admission

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

var (
	myNode    = &user.DefaultInfo{Name: "system:node:mynode", Groups: []string{user.NodesGroup}}
	anonymous = &user.DefaultInfo{Name: "alice"}
)

// audiences is an authorizer that allows nodes to request tokens for the audiences it holds.
type audiences []string

func (as audiences) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	for _, aud := range as {
		if a.GetVerb() == "request-serviceaccounts-token-audience" && a.GetResource() == aud {
			return authorizer.DecisionAllow, "", nil
		}
	}
	return authorizer.DecisionNoOpinion, "", nil
}

func newNodeRestriction(t *testing.T, objects ...runtime.Object) *nodeRestriction {
	t.Helper()
	factory := informers.NewSharedInformerFactory(fake.NewClientset(objects...), 0)
	p := &nodeRestriction{Handler: admission.NewHandler(admission.Create, admission.Update, admission.Delete)}
	p.SetExternalKubeInformerFactory(factory)
	p.SetUnconditionalAuthorizer(audiences{"granted"})
	if err := p.ValidateInitialization(); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
	return p
}

type attrs struct {
	resource, sub, namespace, name string
	op                             admission.Operation
	obj, old                       runtime.Object
	user                           user.Info
}

func (a attrs) record() admission.Attributes {
	gvr := corev1.SchemeGroupVersion.WithResource(a.resource)
	switch a.resource {
	case "leases":
		gvr = coordinationv1.SchemeGroupVersion.WithResource(a.resource)
	case "certificatesigningrequests", "podcertificaterequests":
		gvr = certificatesv1.SchemeGroupVersion.WithResource(a.resource)
	}
	u := a.user
	if u == nil {
		u = myNode
	}
	return admission.NewAttributesRecord(a.obj, a.old, corev1.SchemeGroupVersion.WithKind("X"), a.namespace, a.name, gvr, a.sub, a.op, nil, false, u)
}

// wantErr: "" allowed; otherwise the forbidden message must contain it.
func checkAdmission(t *testing.T, p *nodeRestriction, name string, a attrs, wantErr string) {
	t.Helper()
	err := p.Admit(context.Background(), a.record(), nil)
	switch {
	case wantErr == "" && err != nil:
		t.Errorf("%s: unexpected error: %v", name, err)
	case wantErr != "" && err == nil:
		t.Errorf("%s: allowed, want %q", name, wantErr)
	case wantErr == "NotFound" && !apierrors.IsNotFound(err):
		t.Errorf("%s: got %v, want NotFound", name, err)
	case wantErr != "" && wantErr != "NotFound" && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), wantErr)):
		t.Errorf("%s: got %v, want forbidden %q", name, err, wantErr)
	}
}

func mkNode(name string, mutate func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name + "-uid")}}
	if mutate != nil {
		mutate(n)
	}
	return n
}

func withLabels(kv ...string) func(*corev1.Node) {
	return func(n *corev1.Node) {
		n.Labels = map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			n.Labels[kv[i]] = kv[i+1]
		}
	}
}

func TestNodeRestrictionNodes(t *testing.T) {
	p := newNodeRestriction(t)
	mine := mkNode("mynode", nil)
	taint := func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}} }
	create := func(n *corev1.Node) attrs {
		return attrs{resource: "nodes", name: n.Name, op: admission.Create, obj: n}
	}
	update := func(old, n *corev1.Node) attrs {
		return attrs{resource: "nodes", name: n.Name, op: admission.Update, obj: n, old: old}
	}
	for _, c := range []struct {
		name string
		a    attrs
		want string
	}{
		{"create own", create(mine), ""},
		{"create other", create(mkNode("othernode", nil)), `node "mynode" is not allowed to modify node "othernode"`},
		{"create with configSource", create(mkNode("mynode", func(n *corev1.Node) { n.Spec.ConfigSource = &corev1.NodeConfigSource{} })),
			`node "mynode" is not allowed to create pods with a non-nil configSource`},
		{"create with allowed labels", create(mkNode("mynode", withLabels(
			"kubernetes.io/hostname", "h", "topology.kubernetes.io/zone", "z", "beta.kubernetes.io/arch", "amd64",
			"kubelet.kubernetes.io/x", "1", "sub.node.kubernetes.io/y", "1", "example.com/anything", "1", "plain", "1"))), ""},
		{"create with forbidden labels", create(mkNode("mynode", withLabels(
			"node-restriction.kubernetes.io/foo", "1", "foo.node-restriction.kubernetes.io/bar", "1", "other.kubernetes.io/x", "1", "k8s.io/y", "1"))),
			`node "mynode" is not allowed to set the following labels: foo.node-restriction.kubernetes.io/bar, k8s.io/y, node-restriction.kubernetes.io/foo, other.kubernetes.io/x`},
		{"update status", update(mine, mkNode("mynode", func(n *corev1.Node) { n.Status.Phase = corev1.NodeRunning })), ""},
		{"update other", update(mkNode("othernode", nil), mkNode("othernode", nil)), `node "mynode" is not allowed to modify node "othernode"`},
		{"add taint", update(mine, mkNode("mynode", taint)), `node "mynode" is not allowed to modify taints`},
		{"remove taint", update(mkNode("mynode", taint), mine), `node "mynode" is not allowed to modify taints`},
		{"add restricted label", update(mine, mkNode("mynode", withLabels("node-restriction.kubernetes.io/foo", "bar"))),
			"is not allowed to modify labels: node-restriction.kubernetes.io/foo"},
		{"remove restricted label", update(mkNode("mynode", withLabels("node-restriction.kubernetes.io/foo", "bar")), mine),
			"is not allowed to modify labels: node-restriction.kubernetes.io/foo"},
		{"keep restricted label", update(mkNode("mynode", withLabels("node-restriction.kubernetes.io/foo", "bar")),
			mkNode("mynode", withLabels("node-restriction.kubernetes.io/foo", "bar"))), ""},
		{"change allowed label", update(mkNode("mynode", withLabels("kubernetes.io/hostname", "a")), mkNode("mynode", withLabels("kubernetes.io/hostname", "b"))), ""},
		{"new configSource", update(mine, mkNode("mynode", func(n *corev1.Node) { n.Spec.ConfigSource = &corev1.NodeConfigSource{} })),
			`node "mynode" is not allowed to update configSource to a new non-nil configSource`},
		{"drop configSource", update(mkNode("mynode", func(n *corev1.Node) { n.Spec.ConfigSource = &corev1.NodeConfigSource{} }), mine), ""},
		{"ownerReferences", update(mine, mkNode("mynode", func(n *corev1.Node) { n.OwnerReferences = []metav1.OwnerReference{{Name: "x"}} })),
			`node "mynode" is not allowed to modify ownerReferences`},
		{"delete own", attrs{resource: "nodes", name: "mynode", op: admission.Delete}, ""},
		{"delete other", attrs{resource: "nodes", name: "othernode", op: admission.Delete}, `node "mynode" is not allowed to modify node "othernode"`},
		{"not a node", attrs{resource: "nodes", name: "othernode", op: admission.Delete, user: anonymous}, ""},
		{"node without a name", attrs{resource: "nodes", name: "x", op: admission.Delete, user: &user.DefaultInfo{Name: "system:node:", Groups: []string{user.NodesGroup}}},
			`could not determine node from user "system:node:"`},
	} {
		checkAdmission(t, p, c.name, c.a, c.want)
	}
}

func mkPod(name, node string, mutate func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name + "-uid")},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	if mutate != nil {
		mutate(p)
	}
	return p
}

func mirrorOf(node *corev1.Node, mutate func(*corev1.Pod)) *corev1.Pod {
	return mkPod("mirror", node.Name, func(p *corev1.Pod) {
		p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "hash"}
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID, Controller: ptr.To(true)}}
		if mutate != nil {
			mutate(p)
		}
	})
}

func TestNodeRestrictionPods(t *testing.T) {
	mine := mkPod("mine", "mynode", nil)
	other := mkPod("other", "othernode", nil)
	unbound := mkPod("unbound", "", nil)
	myNodeObj := mkNode("mynode", nil)
	p := newNodeRestriction(t, mine, other, unbound, myNodeObj)
	status := func(old *corev1.Pod, mutate func(*corev1.Pod)) attrs {
		pod := old.DeepCopy()
		pod.Status.Phase = corev1.PodRunning
		if mutate != nil {
			mutate(pod)
		}
		return attrs{resource: "pods", sub: "status", namespace: "ns", name: old.Name, op: admission.Update, obj: pod, old: old}
	}
	create := func(pod *corev1.Pod) attrs {
		return attrs{resource: "pods", namespace: "ns", name: pod.Name, op: admission.Create, obj: pod}
	}
	evict := func(name string) attrs {
		return attrs{resource: "pods", sub: "eviction", namespace: "ns", name: name, op: admission.Create,
			obj: &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}}
	}
	for _, c := range []struct {
		name string
		a    attrs
		want string
	}{
		{"status of own pod", status(mine, nil), ""},
		{"status of another node's pod", status(other, nil), `node "mynode" can only update pod status for pods with spec.nodeName set to itself`},
		{"status of an unbound pod", status(unbound, nil), `node "mynode" can only update pod status for pods with spec.nodeName set to itself`},
		{"labels through status", status(mine, func(p *corev1.Pod) { p.Labels = map[string]string{"a": "b"} }), `node "mynode" cannot update labels through pod status`},
		{"claim statuses through status", status(mine, func(p *corev1.Pod) {
			p.Status.ResourceClaimStatuses = []corev1.PodResourceClaimStatus{{Name: "c", ResourceClaimName: ptr.To("x")}}
		}), `node "mynode" cannot update resource claim statues`},
		{"delete own pod", attrs{resource: "pods", namespace: "ns", name: "mine", op: admission.Delete}, ""},
		{"delete another node's pod", attrs{resource: "pods", namespace: "ns", name: "other", op: admission.Delete}, `node "mynode" can only delete pods with spec.nodeName set to itself`},
		{"delete a missing pod", attrs{resource: "pods", namespace: "ns", name: "gone", op: admission.Delete}, "NotFound"},
		{"update a pod", attrs{resource: "pods", namespace: "ns", name: "mine", op: admission.Update, obj: mine, old: mine},
			`unexpected operation "UPDATE", node "mynode" can only create and delete mirror pods`},
		{"create a mirror pod", create(mirrorOf(myNodeObj, nil)), ""},
		{"create a regular pod", create(mkPod("regular", "mynode", nil)), `pod does not have "kubernetes.io/config.mirror" annotation, node "mynode" can only create mirror pods`},
		{"create a mirror pod elsewhere", create(mirrorOf(myNodeObj, func(p *corev1.Pod) { p.Spec.NodeName = "othernode" })),
			`node "mynode" can only create pods with spec.nodeName set to itself`},
		{"mirror pod without owner", create(mirrorOf(myNodeObj, func(p *corev1.Pod) { p.OwnerReferences = nil })),
			`node "mynode" can only create pods with an owner reference set to itself`},
		{"mirror pod owned by another node", create(mirrorOf(myNodeObj, func(p *corev1.Pod) { p.OwnerReferences[0].Name = "othernode" })),
			`node "mynode" can only create pods with an owner reference set to itself`},
		{"mirror pod not controlled", create(mirrorOf(myNodeObj, func(p *corev1.Pod) { p.OwnerReferences[0].Controller = nil })),
			`node "mynode" can only create pods with a controller owner reference set to itself`},
		{"mirror pod blocking deletion", create(mirrorOf(myNodeObj, func(p *corev1.Pod) { p.OwnerReferences[0].BlockOwnerDeletion = ptr.To(true) })),
			`node "mynode" must not set blockOwnerDeletion on an owner reference`},
		{"mirror pod of a stale node", create(mirrorOf(myNodeObj, func(p *corev1.Pod) { p.OwnerReferences[0].UID = "old" })),
			`node mynode UID mismatch: expected old got mynode-uid`},
		{"mirror pod with a service account", create(mirrorOf(myNodeObj, func(p *corev1.Pod) { p.Spec.ServiceAccountName = "default" })),
			`node "mynode" can not create pods that reference serviceaccounts`},
		{"mirror pod with a secret", create(mirrorOf(myNodeObj, func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}}}
		})), `node "mynode" can not create pods that reference secrets`},
		{"mirror pod with a configmap env", create(mirrorOf(myNodeObj, func(p *corev1.Pod) {
			p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}}}}
		})), `node "mynode" can not create pods that reference configmaps`},
		{"mirror pod with a claim", create(mirrorOf(myNodeObj, func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "d", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}}}
		})), `node "mynode" can not create pods that reference persistentvolumeclaims`},
		{"mirror pod with a token", create(mirrorOf(myNodeObj, func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "t", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "t"}}}}}}}
		})), `node "mynode" can not create pods that reference serviceaccounts (via projected volumes)`},
		{"mirror pod with host path and empty dir", create(mirrorOf(myNodeObj, func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{
				{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}},
				{Name: "e", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			}
		})), ""},
		{"evict own pod", evict("mine"), ""},
		{"evict another node's pod", evict("other"), "node mynode can only evict pods with spec.nodeName set to itself"},
		{"evict by the body's name", attrs{resource: "pods", sub: "eviction", namespace: "ns", op: admission.Create,
			obj: &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "other"}}}, "node mynode can only evict pods with spec.nodeName set to itself"},
		{"other subresource", attrs{resource: "pods", sub: "binding", namespace: "ns", name: "mine", op: admission.Create},
			`unexpected pod subresource "binding", only 'status' and 'eviction' are allowed`},
		{"not a node", status(other, nil), ""},
	} {
		if c.name == "not a node" {
			c.a.user = anonymous
		}
		checkAdmission(t, p, c.name, c.a, c.want)
	}
}

func TestNodeRestrictionTokens(t *testing.T) {
	mine := mkPod("mine", "mynode", func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "t", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "t"}},
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "v", Audience: "vault"}},
		}}}}}
	})
	other := mkPod("other", "othernode", nil)
	p := newNodeRestriction(t, mine, other)
	token := func(ref *authenticationv1.BoundObjectReference, audiences ...string) attrs {
		return attrs{resource: "serviceaccounts", sub: "token", namespace: "ns", name: "default", op: admission.Create,
			obj: &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: ref, Audiences: audiences}}}
	}
	podRef := func(pod *corev1.Pod) *authenticationv1.BoundObjectReference {
		return &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}
	}
	for _, c := range []struct {
		name string
		a    attrs
		want string
	}{
		{"bound to own pod", token(podRef(mine)), ""},
		{"a projected audience", token(podRef(mine), "vault"), ""},
		{"an authorized audience", token(podRef(mine), "granted"), ""},
		{"another audience", token(podRef(mine), "api"), `system:node:mynode is not authorized to request tokens for audience "api"`},
		{"two audiences", token(podRef(mine), "vault", "granted"), "node may only request 0 or 1 audiences"},
		{"not bound", token(nil), "node requested token not bound to a pod"},
		{"bound to a secret", token(&authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Secret", Name: "s", UID: "u"}), "node requested token not bound to a pod"},
		{"no uid", token(&authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "mine"}), "node requested token with a pod binding without a uid"},
		{"stale uid", token(&authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "mine", UID: "old"}),
			"the UID in the bound object reference (old) does not match the UID in record. The object might have been deleted and then recreated"},
		{"another node's pod", token(podRef(other)), "node requested token bound to a pod scheduled on a different node"},
		{"a missing pod", token(&authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "gone", UID: "u"}), "NotFound"},
		{"a service account itself", attrs{resource: "serviceaccounts", namespace: "ns", name: "default", op: admission.Create, obj: &corev1.ServiceAccount{}}, ""},
	} {
		checkAdmission(t, p, c.name, c.a, c.want)
	}
}

func TestNodeRestrictionLeasesAndCSRs(t *testing.T) {
	p := newNodeRestriction(t)
	lease := func(ns, name string) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	csr := func(cn, signer string) *certificatesv1.CertificateSigningRequest {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn}}, key)
		if err != nil {
			t.Fatal(err)
		}
		return &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: signer,
			Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})}}
	}
	for _, c := range []struct {
		name string
		a    attrs
		want string
	}{
		{"create own lease", attrs{resource: "leases", namespace: "kube-node-lease", op: admission.Create, obj: lease("kube-node-lease", "mynode")}, ""},
		{"create another's lease", attrs{resource: "leases", namespace: "kube-node-lease", op: admission.Create, obj: lease("kube-node-lease", "othernode")},
			"can only access node lease with the same name as the requesting node"},
		{"update own lease", attrs{resource: "leases", namespace: "kube-node-lease", name: "mynode", op: admission.Update, obj: lease("kube-node-lease", "mynode"), old: lease("kube-node-lease", "mynode")}, ""},
		{"update another's lease", attrs{resource: "leases", namespace: "kube-node-lease", name: "othernode", op: admission.Update, obj: lease("kube-node-lease", "othernode"), old: lease("kube-node-lease", "othernode")},
			"can only access node lease with the same name as the requesting node"},
		{"lease elsewhere", attrs{resource: "leases", namespace: "kube-system", op: admission.Create, obj: lease("kube-system", "mynode")},
			`can only access leases in the "kube-node-lease" system namespace`},
		{"own client CSR", attrs{resource: "certificatesigningrequests", op: admission.Create, obj: csr("system:node:mynode", certificatesv1.KubeAPIServerClientKubeletSignerName)}, ""},
		{"another's serving CSR", attrs{resource: "certificatesigningrequests", op: admission.Create, obj: csr("system:node:othernode", certificatesv1.KubeletServingSignerName)},
			"can only create a node CSR with CN=system:node:mynode"},
		{"another signer", attrs{resource: "certificatesigningrequests", op: admission.Create, obj: csr("anything", "example.com/signer")}, ""},
	} {
		checkAdmission(t, p, c.name, c.a, c.want)
	}
}
