package admission

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apiserver/pkg/admission"
	genericadmissioninitializer "k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	kubeletapis "k8s.io/kubelet/pkg/apis"

	"github.com/berth-cluster/berth/pkg/auth/node"
)

// NodeRestrictionPluginName is the name Kubernetes gives this plugin.
const NodeRestrictionPluginName = "NodeRestriction"

func registerNodeRestriction(plugins *admission.Plugins) {
	plugins.Register(NodeRestrictionPluginName, func(io.Reader) (admission.Interface, error) {
		return &nodeRestriction{Handler: admission.NewHandler(admission.Create, admission.Update, admission.Delete)}, nil
	})
}

// nodeRestriction limits what a node's credentials write to what is the node's: its own Node
// (without the labels, taints and config source that would steer workloads to it), the status
// of pods bound to it, mirror pods of its own, its Lease, and tokens and certificate requests
// for its pods. The node authorizer lets these writes through, since it cannot see the objects.
type nodeRestriction struct {
	*admission.Handler
	pods            corelisters.PodLister
	nodes           corelisters.NodeLister
	serviceAccounts corelisters.ServiceAccountLister
	authz           authorizer.UnconditionalAuthorizer
}

var (
	_ admission.MutationInterface                                  = &nodeRestriction{}
	_ genericadmissioninitializer.WantsExternalKubeInformerFactory = &nodeRestriction{}
	_ genericadmissioninitializer.WantsUnconditionalAuthorizer     = &nodeRestriction{}
)

func (p *nodeRestriction) SetExternalKubeInformerFactory(f informers.SharedInformerFactory) {
	p.pods = f.Core().V1().Pods().Lister()
	p.nodes = f.Core().V1().Nodes().Lister()
	p.serviceAccounts = f.Core().V1().ServiceAccounts().Lister()
}

func (p *nodeRestriction) SetUnconditionalAuthorizer(a authorizer.UnconditionalAuthorizer) {
	p.authz = a
}

func (p *nodeRestriction) ValidateInitialization() error {
	switch {
	case p.pods == nil:
		return fmt.Errorf("%s requires a pod getter", NodeRestrictionPluginName)
	case p.nodes == nil:
		return fmt.Errorf("%s requires a node getter", NodeRestrictionPluginName)
	case p.serviceAccounts == nil:
		return fmt.Errorf("%s requires a service account getter", NodeRestrictionPluginName)
	case p.authz == nil:
		return fmt.Errorf("%s requires an authorizer", NodeRestrictionPluginName)
	}
	return nil
}

var (
	podsResource            = corev1.Resource("pods")
	nodesResource           = corev1.Resource("nodes")
	pvcsResource            = corev1.Resource("persistentvolumeclaims")
	serviceAccountsResource = corev1.Resource("serviceaccounts")
	leasesResource          = coordinationv1.Resource("leases")
	csiNodesResource        = storagev1.Resource("csinodes")
	resourceSlicesResource  = resourcev1.Resource("resourceslices")
	csrsResource            = certificatesv1.Resource("certificatesigningrequests")
	pcrsResource            = certificatesv1.Resource("podcertificaterequests")
)

// Admit checks a node's write; anyone else's passes. It changes nothing, but runs among the
// mutating plugins, right after ServiceAccount, as kube-apiserver runs it: before the
// object's validation, so a node's forbidden write is a 403 even when it is also invalid.
func (p *nodeRestriction) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	nodeName, isNode := node.NodeIdentity(a.GetUserInfo())
	if !isNode {
		return nil
	}
	if nodeName == "" {
		return admission.NewForbidden(a, fmt.Errorf("could not determine node from user %q", a.GetUserInfo().GetName()))
	}
	switch a.GetResource().GroupResource() {
	case podsResource:
		switch a.GetSubresource() {
		case "":
			return p.admitPod(nodeName, a)
		case "status":
			return p.admitPodStatus(nodeName, a)
		case "eviction":
			return p.admitPodEviction(nodeName, a)
		}
		return admission.NewForbidden(a, fmt.Errorf("unexpected pod subresource %q, only 'status' and 'eviction' are allowed", a.GetSubresource()))
	case nodesResource:
		return p.admitNode(nodeName, a)
	case pvcsResource:
		if a.GetSubresource() != "status" {
			return admission.NewForbidden(a, errors.New("may only update PVC status"))
		}
		return p.admitPVCStatus(nodeName, a)
	case serviceAccountsResource:
		return p.admitServiceAccount(ctx, nodeName, a)
	case leasesResource:
		return p.admitLease(nodeName, a)
	case csiNodesResource:
		return p.admitCSINode(nodeName, a)
	case resourceSlicesResource:
		return p.admitResourceSlice(nodeName, a)
	case csrsResource:
		return p.admitCSR(nodeName, a)
	case pcrsResource:
		return p.admitPodCertificateRequest(ctx, nodeName, a)
	}
	return nil
}

// getPod is an existing pod from the informer: NotFound as it is, other errors forbidden.
func (p *nodeRestriction) getPod(a admission.Attributes, name string) (*corev1.Pod, error) {
	pod, err := p.pods.Pods(a.GetNamespace()).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, err
	}
	if err != nil {
		return nil, admission.NewForbidden(a, err)
	}
	return pod, nil
}

func (p *nodeRestriction) admitPod(nodeName string, a admission.Attributes) error {
	switch a.GetOperation() {
	case admission.Create:
		return p.admitMirrorPod(nodeName, a)
	case admission.Delete:
		pod, err := p.getPod(a, a.GetName())
		if err != nil {
			return err
		}
		if pod.Spec.NodeName != nodeName {
			return admission.NewForbidden(a, fmt.Errorf("node %q can only delete pods with spec.nodeName set to itself", nodeName))
		}
		return nil
	}
	return admission.NewForbidden(a, fmt.Errorf("unexpected operation %q, node %q can only create and delete mirror pods", a.GetOperation(), nodeName))
}

// admitMirrorPod lets a node create only mirror pods of its own static pods: bound to it,
// owned by its Node, and referencing no API object it could not otherwise read.
func (p *nodeRestriction) admitMirrorPod(nodeName string, a admission.Attributes) error {
	pod, ok := a.GetObject().(*corev1.Pod)
	if !ok {
		return admission.NewForbidden(a, fmt.Errorf("unexpected type %T", a.GetObject()))
	}
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; !mirror {
		return admission.NewForbidden(a, fmt.Errorf("pod does not have %q annotation, node %q can only create mirror pods", corev1.MirrorPodAnnotationKey, nodeName))
	}
	if pod.Spec.NodeName != nodeName {
		return admission.NewForbidden(a, fmt.Errorf("node %q can only create pods with spec.nodeName set to itself", nodeName))
	}
	switch len(pod.OwnerReferences) {
	case 0:
		return admission.NewForbidden(a, fmt.Errorf("node %q can only create pods with an owner reference set to itself", nodeName))
	case 1:
	default:
		return admission.NewForbidden(a, fmt.Errorf("node %q can only create pods with a single owner reference set to itself", nodeName))
	}
	owner := pod.OwnerReferences[0]
	if owner.APIVersion != corev1.SchemeGroupVersion.String() || owner.Kind != "Node" || owner.Name != nodeName {
		return admission.NewForbidden(a, fmt.Errorf("node %q can only create pods with an owner reference set to itself", nodeName))
	}
	if owner.Controller == nil || !*owner.Controller {
		return admission.NewForbidden(a, fmt.Errorf("node %q can only create pods with a controller owner reference set to itself", nodeName))
	}
	if owner.BlockOwnerDeletion != nil && *owner.BlockOwnerDeletion {
		return admission.NewForbidden(a, fmt.Errorf("node %q must not set blockOwnerDeletion on an owner reference", nodeName))
	}
	n, err := p.nodes.Get(nodeName)
	if apierrors.IsNotFound(err) {
		return err
	}
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("error looking up node %s to verify uid: %v", nodeName, err))
	}
	if owner.UID != n.UID {
		return admission.NewForbidden(a, fmt.Errorf("node %s UID mismatch: expected %s got %s", nodeName, owner.UID, n.UID))
	}
	referenced, what, err := apiObjectReference(pod)
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("error checking mirror pod for API references: %w", err))
	}
	if referenced {
		return admission.NewForbidden(a, fmt.Errorf("node %q can not create pods that reference %s", nodeName, what))
	}
	return nil
}

// apiObjectReference reports whether a pod references an API object, and which kind.
func apiObjectReference(pod *corev1.Pod) (bool, string, error) {
	if pod.Spec.ServiceAccountName != "" {
		return true, "serviceaccounts", nil
	}
	secrets, configMaps := false, false
	if len(pod.Spec.ImagePullSecrets) > 0 && slices.ContainsFunc(pod.Spec.ImagePullSecrets, func(r corev1.LocalObjectReference) bool { return r.Name != "" }) {
		secrets = true
	}
	visit := func(c *corev1.Container) {
		for _, e := range c.EnvFrom {
			secrets = secrets || (e.SecretRef != nil && e.SecretRef.Name != "")
			configMaps = configMaps || (e.ConfigMapRef != nil && e.ConfigMapRef.Name != "")
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil {
				secrets = secrets || (e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name != "")
				configMaps = configMaps || (e.ValueFrom.ConfigMapKeyRef != nil && e.ValueFrom.ConfigMapKeyRef.Name != "")
			}
		}
	}
	for i := range pod.Spec.InitContainers {
		visit(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		visit(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.EphemeralContainers {
		visit((*corev1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	// As upstream: every secret (or configmap) a pod names, in a volume too, is "secrets"
	// before any volume is looked at by its kind.
	for _, v := range pod.Spec.Volumes {
		s := v.VolumeSource
		secrets = secrets || (s.Secret != nil && s.Secret.SecretName != "") || (s.AzureFile != nil && s.AzureFile.SecretName != "") ||
			(s.CephFS != nil && s.CephFS.SecretRef != nil) || (s.Cinder != nil && s.Cinder.SecretRef != nil) ||
			(s.FlexVolume != nil && s.FlexVolume.SecretRef != nil) || (s.RBD != nil && s.RBD.SecretRef != nil) ||
			(s.ScaleIO != nil && s.ScaleIO.SecretRef != nil) || (s.ISCSI != nil && s.ISCSI.SecretRef != nil) ||
			(s.StorageOS != nil && s.StorageOS.SecretRef != nil) || (s.CSI != nil && s.CSI.NodePublishSecretRef != nil)
		configMaps = configMaps || (s.ConfigMap != nil && s.ConfigMap.Name != "")
		if s.Projected != nil {
			for _, src := range s.Projected.Sources {
				secrets = secrets || (src.Secret != nil && src.Secret.Name != "")
				configMaps = configMaps || (src.ConfigMap != nil && src.ConfigMap.Name != "")
			}
		}
	}
	switch {
	case secrets:
		return true, "secrets", nil
	case configMaps:
		return true, "configmaps", nil
	case len(pod.Spec.ResourceClaims) > 0:
		return true, "resourceclaims", nil
	}
	for _, v := range pod.Spec.Volumes {
		s := v.VolumeSource
		switch {
		case s.AWSElasticBlockStore != nil, s.AzureDisk != nil, s.CephFS != nil, s.Cinder != nil,
			s.DownwardAPI != nil, s.EmptyDir != nil, s.FC != nil, s.FlexVolume != nil, s.Flocker != nil, s.GCEPersistentDisk != nil,
			s.GitRepo != nil, s.HostPath != nil, s.Image != nil, s.ISCSI != nil, s.NFS != nil, s.PhotonPersistentDisk != nil,
			s.PortworxVolume != nil, s.Quobyte != nil, s.RBD != nil, s.ScaleIO != nil, s.StorageOS != nil, s.VsphereVolume != nil:
			continue
		case s.ConfigMap != nil:
			return true, "configmaps (via configmap volumes)", nil
		case s.Secret != nil:
			return true, "secrets (via secret volumes)", nil
		case s.CSI != nil:
			return true, "csidrivers (via CSI volumes)", nil
		case s.Glusterfs != nil:
			return true, "endpoints (via glusterFS volumes)", nil
		case s.PersistentVolumeClaim != nil:
			return true, "persistentvolumeclaims", nil
		case s.Ephemeral != nil:
			return true, "persistentvolumeclaims (via ephemeral volumes)", nil
		case s.AzureFile != nil:
			return true, "secrets (via azureFile volumes)", nil
		case s.Projected != nil:
			for _, src := range s.Projected.Sources {
				switch {
				case src.ConfigMap != nil:
					return true, "configmaps (via projected volumes)", nil
				case src.Secret != nil:
					return true, "secrets (via projected volumes)", nil
				case src.ServiceAccountToken != nil:
					return true, "serviceaccounts (via projected volumes)", nil
				case src.ClusterTrustBundle != nil:
					return true, "clustertrustbundles", nil
				case src.PodCertificate != nil:
					return true, "podcertificates", nil
				case src.DownwardAPI != nil:
				default:
					return true, "", fmt.Errorf("unknown source for projected volume %q", v.Name)
				}
			}
		default:
			return true, "", fmt.Errorf("unknown volume type for volume  %q", v.Name)
		}
	}
	return false, "", nil
}

func (p *nodeRestriction) admitPodStatus(nodeName string, a admission.Attributes) error {
	if a.GetOperation() != admission.Update {
		return admission.NewForbidden(a, fmt.Errorf("unexpected operation %q", a.GetOperation()))
	}
	old, ok := a.GetOldObject().(*corev1.Pod)
	if !ok {
		return admission.NewForbidden(a, fmt.Errorf("unexpected type %T", a.GetOldObject()))
	}
	if old.Spec.NodeName != nodeName {
		return admission.NewForbidden(a, fmt.Errorf("node %q can only update pod status for pods with spec.nodeName set to itself", nodeName))
	}
	pod, ok := a.GetObject().(*corev1.Pod)
	if !ok {
		return admission.NewForbidden(a, fmt.Errorf("unexpected type %T", a.GetObject()))
	}
	if !labels.Equals(old.Labels, pod.Labels) {
		return admission.NewForbidden(a, fmt.Errorf("node %q cannot update labels through pod status", nodeName))
	}
	// The claims a pod's status names are what the node authorizer lets the node read.
	if !equality.Semantic.DeepEqual(claimStatuses(old.Status.ResourceClaimStatuses), claimStatuses(pod.Status.ResourceClaimStatuses)) {
		return admission.NewForbidden(a, fmt.Errorf("node %q cannot update resource claim statues", nodeName))
	}
	if !equality.Semantic.DeepEqual(old.Status.ExtendedResourceClaimStatus, pod.Status.ExtendedResourceClaimStatus) {
		return admission.NewForbidden(a, fmt.Errorf("node %q cannot update extended resource claim status", nodeName))
	}
	if !equality.Semantic.DeepEqual(emptyNil(old.Status.NodeAllocatableResourceClaimStatuses), emptyNil(pod.Status.NodeAllocatableResourceClaimStatuses)) {
		return admission.NewForbidden(a, fmt.Errorf("node %q cannot update node allocatable resource claim statuses", nodeName))
	}
	return nil
}

// claimStatuses keeps of resource claim statuses what NodeRestriction compares.
func claimStatuses(s []corev1.PodResourceClaimStatus) []string {
	out := make([]string, 0, len(s))
	for _, c := range s {
		name := "\x00"
		if c.ResourceClaimName != nil {
			name = *c.ResourceClaimName
		}
		out = append(out, c.Name+"/"+name)
	}
	return out
}

func emptyNil[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

func (p *nodeRestriction) admitPodEviction(nodeName string, a admission.Attributes) error {
	if a.GetOperation() != admission.Create {
		return admission.NewForbidden(a, fmt.Errorf("unexpected operation %s", a.GetOperation()))
	}
	eviction, ok := a.GetObject().(*policyv1.Eviction)
	if !ok {
		return admission.NewForbidden(a, fmt.Errorf("unexpected type %T", a.GetObject()))
	}
	name := a.GetName()
	if name == "" {
		if eviction.Name == "" {
			return admission.NewForbidden(a, errors.New("could not determine pod from request data"))
		}
		name = eviction.Name
	}
	pod, err := p.getPod(a, name)
	if err != nil {
		return err
	}
	if pod.Spec.NodeName != nodeName {
		return admission.NewForbidden(a, fmt.Errorf("node %s can only evict pods with spec.nodeName set to itself", nodeName))
	}
	return nil
}

// admitPVCStatus lets a node change only a claim's capacity, conditions and allocation.
func (p *nodeRestriction) admitPVCStatus(nodeName string, a admission.Attributes) error {
	if a.GetOperation() != admission.Update {
		return admission.NewForbidden(a, fmt.Errorf("unexpected operation %q", a.GetOperation()))
	}
	old, ok := a.GetOldObject().(*corev1.PersistentVolumeClaim)
	if !ok {
		return admission.NewForbidden(a, fmt.Errorf("unexpected type %T", a.GetOldObject()))
	}
	pvc, ok := a.GetObject().(*corev1.PersistentVolumeClaim)
	if !ok {
		return admission.NewForbidden(a, fmt.Errorf("unexpected type %T", a.GetObject()))
	}
	strip := func(c *corev1.PersistentVolumeClaim) *corev1.PersistentVolumeClaim {
		c = c.DeepCopy()
		c.ResourceVersion = ""
		c.ManagedFields = nil
		c.Status.Capacity = nil
		c.Status.Conditions = nil
		c.Status.AllocatedResourceStatuses = nil
		c.Status.AllocatedResources = nil
		return c
	}
	old, pvc = strip(old), strip(pvc)
	if !equality.Semantic.DeepEqual(old, pvc) {
		return admission.NewForbidden(a, fmt.Errorf("node %q is not allowed to update fields other than status.quantity and status.conditions: %v", nodeName, diff.Diff(old, pvc)))
	}
	return nil
}

func (p *nodeRestriction) admitNode(nodeName string, a admission.Attributes) error {
	if a.GetName() != nodeName {
		return admission.NewForbidden(a, fmt.Errorf("node %q is not allowed to modify node %q", nodeName, a.GetName()))
	}
	switch a.GetOperation() {
	case admission.Create:
		n, ok := a.GetObject().(*corev1.Node)
		if !ok {
			return admission.NewForbidden(a, fmt.Errorf("unexpected type %T", a.GetObject()))
		}
		// The node authorizer scopes a node's reads by its spec; a config source would widen them.
		if n.Spec.ConfigSource != nil {
			return admission.NewForbidden(a, fmt.Errorf("node %q is not allowed to create pods with a non-nil configSource", nodeName))
		}
		if forbidden := forbiddenNodeLabels(modifiedLabels(n.Labels, nil)); len(forbidden) > 0 {
			return admission.NewForbidden(a, fmt.Errorf("node %q is not allowed to set the following labels: %s", nodeName, strings.Join(forbidden, ", ")))
		}
	case admission.Update:
		n, ok := a.GetObject().(*corev1.Node)
		if !ok {
			return admission.NewForbidden(a, fmt.Errorf("unexpected type %T", a.GetObject()))
		}
		old, ok := a.GetOldObject().(*corev1.Node)
		if !ok {
			return admission.NewForbidden(a, fmt.Errorf("unexpected type %T", a.GetObject()))
		}
		// Only a new non-nil one counts: an old node agent may drop the field in a status write.
		if n.Spec.ConfigSource != nil && !equality.Semantic.DeepEqual(n.Spec.ConfigSource, old.Spec.ConfigSource) {
			return admission.NewForbidden(a, fmt.Errorf("node %q is not allowed to update configSource to a new non-nil configSource", nodeName))
		}
		// Its taints and labels decide which pods come to a node: it may not steer them.
		if !equality.Semantic.DeepEqual(n.Spec.Taints, old.Spec.Taints) {
			return admission.NewForbidden(a, fmt.Errorf("node %q is not allowed to modify taints", nodeName))
		}
		if !equality.Semantic.DeepEqual(n.OwnerReferences, old.OwnerReferences) {
			return admission.NewForbidden(a, fmt.Errorf("node %q is not allowed to modify ownerReferences", nodeName))
		}
		if forbidden := forbiddenNodeLabels(modifiedLabels(n.Labels, old.Labels)); len(forbidden) > 0 {
			return admission.NewForbidden(a, fmt.Errorf("is not allowed to modify labels: %s", strings.Join(forbidden, ", ")))
		}
	}
	return nil
}

// modifiedLabels are the keys added, removed or changed between a and b.
func modifiedLabels(a, b map[string]string) map[string]bool {
	out := map[string]bool{}
	for k, v := range a {
		if w, ok := b[k]; !ok || v != w {
			out[k] = true
		}
	}
	for k, v := range b {
		if w, ok := a[k]; !ok || v != w {
			out[k] = true
		}
	}
	return out
}

// forbiddenNodeLabels are the keys, sorted, a node may not set on itself: those under
// node-restriction.kubernetes.io/, and kubernetes.io or k8s.io ones other than the kubelet's.
func forbiddenNodeLabels(keys map[string]bool) []string {
	var out []string
	for k := range keys {
		ns := labelNamespace(k)
		restricted := ns == corev1.LabelNamespaceNodeRestriction || strings.HasSuffix(ns, "."+corev1.LabelNamespaceNodeRestriction)
		kubernetes := ns == "kubernetes.io" || strings.HasSuffix(ns, ".kubernetes.io") || ns == "k8s.io" || strings.HasSuffix(ns, ".k8s.io")
		if restricted || (kubernetes && !kubeletapis.IsKubeletLabel(k)) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func labelNamespace(key string) string {
	if ns, _, ok := strings.Cut(key, "/"); ok {
		return ns
	}
	return ""
}

// admitServiceAccount lets a node request only tokens bound to a pod of its own, for an
// audience the pod uses (or one it is authorized to request).
func (p *nodeRestriction) admitServiceAccount(ctx context.Context, nodeName string, a admission.Attributes) error {
	if a.GetOperation() != admission.Create || a.GetSubresource() != "token" {
		return nil
	}
	tr, ok := a.GetObject().(*authenticationv1.TokenRequest)
	if !ok {
		return admission.NewForbidden(a, fmt.Errorf("unexpected type %T", a.GetObject()))
	}
	ref := tr.Spec.BoundObjectRef
	if ref == nil || ref.APIVersion != "v1" || ref.Kind != "Pod" || ref.Name == "" {
		return admission.NewForbidden(a, errors.New("node requested token not bound to a pod"))
	}
	if ref.UID == "" {
		return admission.NewForbidden(a, errors.New("node requested token with a pod binding without a uid"))
	}
	pod, err := p.getPod(a, ref.Name)
	if err != nil {
		return err
	}
	if ref.UID != pod.UID {
		return admission.NewForbidden(a, fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
	}
	if pod.Spec.NodeName != nodeName {
		return admission.NewForbidden(a, errors.New("node requested token bound to a pod scheduled on a different node"))
	}
	if err := p.checkAudience(ctx, tr, pod, a); err != nil {
		return admission.NewForbidden(a, err)
	}
	return nil
}

// checkAudience is ServiceAccountNodeAudienceRestriction (on by default): the audience must
// be one of a serviceAccountToken projection of the pod, or the node must be authorized to
// request-serviceaccounts-token-audience it. (The CSI drivers' token audiences that upstream
// also accepts need storage.k8s.io, which berth does not serve.)
func (p *nodeRestriction) checkAudience(ctx context.Context, tr *authenticationv1.TokenRequest, pod *corev1.Pod, a admission.Attributes) error {
	audience := ""
	switch len(tr.Spec.Audiences) {
	case 0:
	case 1:
		audience = tr.Spec.Audiences[0]
	default:
		return errors.New("node may only request 0 or 1 audiences")
	}
	for _, v := range pod.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			if src.ServiceAccountToken != nil && src.ServiceAccountToken.Audience == audience {
				return nil
			}
		}
	}
	attrs := authorizer.AttributesRecord{
		User:            a.GetUserInfo(),
		Verb:            "request-serviceaccounts-token-audience",
		APIGroup:        a.GetResource().Group,
		APIVersion:      a.GetResource().Version,
		Resource:        audience,
		Namespace:       a.GetNamespace(),
		Name:            a.GetName(),
		ResourceRequest: true,
	}
	decision, _, err := p.authz.Authorize(ctx, attrs)
	if decision == authorizer.DecisionAllow {
		return nil
	}
	if err != nil {
		return fmt.Errorf("error authorizing %s to request tokens for audience %q: %w", a.GetUserInfo().GetName(), audience, err)
	}
	return fmt.Errorf("%s is not authorized to request tokens for audience %q", a.GetUserInfo().GetName(), audience)
}

func (p *nodeRestriction) admitLease(nodeName string, a admission.Attributes) error {
	if a.GetNamespace() != node.NodeLeaseNamespace {
		return admission.NewForbidden(a, fmt.Errorf("can only access leases in the %q system namespace", node.NodeLeaseNamespace))
	}
	name := a.GetName()
	if a.GetOperation() == admission.Create {
		lease, ok := a.GetObject().(*coordinationv1.Lease)
		if !ok {
			return admission.NewForbidden(a, fmt.Errorf("unexpected type %T", a.GetObject()))
		}
		name = lease.Name
	}
	if name != nodeName {
		return admission.NewForbidden(a, errors.New("can only access node lease with the same name as the requesting node"))
	}
	return nil
}

func (p *nodeRestriction) admitCSINode(nodeName string, a admission.Attributes) error {
	name := a.GetName()
	if a.GetOperation() == admission.Create {
		accessor, err := meta.Accessor(a.GetObject())
		if err != nil {
			return admission.NewForbidden(a, errors.New("unable to access the object name"))
		}
		name = accessor.GetName()
	}
	if name != nodeName {
		return admission.NewForbidden(a, errors.New("can only access CSINode with the same name as the requesting node"))
	}
	if a.GetSubresource() == "status" {
		return admission.NewForbidden(a, errors.New("CSIVolumeHealth feature gate is disabled"))
	}
	return nil
}

func (p *nodeRestriction) admitResourceSlice(nodeName string, a admission.Attributes) error {
	var obj any
	var verb string
	switch a.GetOperation() {
	case admission.Create:
		obj, verb = a.GetObject(), "create"
	case admission.Delete:
		obj, verb = a.GetOldObject(), "delete"
	default:
		return nil
	}
	slice, ok := obj.(*resourcev1.ResourceSlice)
	if !ok {
		return admission.NewForbidden(a, fmt.Errorf("unexpected type %T", obj))
	}
	if slice.Spec.NodeName == nil || *slice.Spec.NodeName != nodeName {
		return admission.NewForbidden(a, fmt.Errorf("can only %s ResourceSlice with the same NodeName as the requesting node", verb))
	}
	return nil
}

// admitCSR lets a node ask the kubelet signers only for certificates of its own name.
func (p *nodeRestriction) admitCSR(nodeName string, a admission.Attributes) error {
	if a.GetOperation() != admission.Create {
		return nil
	}
	csr, ok := a.GetObject().(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return admission.NewForbidden(a, fmt.Errorf("unexpected type %T", a.GetObject()))
	}
	if csr.Spec.SignerName != certificatesv1.KubeletServingSignerName && csr.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName {
		return nil
	}
	cn, err := csrCommonName(csr.Spec.Request)
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("unable to parse csr: %w", err))
	}
	if cn != "system:node:"+nodeName {
		return admission.NewForbidden(a, fmt.Errorf("can only create a node CSR with CN=system:node:%s", nodeName))
	}
	return nil
}

// csrCommonName is the subject common name of a PEM certificate request.
func csrCommonName(request []byte) (string, error) {
	block, _ := pem.Decode(request)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return "", errors.New("PEM block type must be CERTIFICATE REQUEST")
	}
	cr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return "", err
	}
	return cr.Subject.CommonName, nil
}
