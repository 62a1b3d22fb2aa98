package admission

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	genericadmissioninitializer "k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/storage/names"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/utils/ptr"
)

// ServiceAccountPluginName is the name Kubernetes gives this plugin.
const ServiceAccountPluginName = "ServiceAccount"

// DefaultServiceAccountName is the account a pod runs as when it names none.
const DefaultServiceAccountName = "default"

// The names Kubernetes gives the parts of a pod's API credentials.
const (
	// EnforceMountableSecretsAnnotation set to "true" on a service account limits its pods to
	// the secrets the account lists.
	EnforceMountableSecretsAnnotation = "kubernetes.io/enforce-mountable-secrets"
	// ServiceAccountVolumeName is the prefix of the token volume's name (a random suffix follows).
	ServiceAccountVolumeName = "kube-api-access"
	// DefaultAPITokenMountPath is where every container finds token, ca.crt and namespace.
	DefaultAPITokenMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
	// RootCACertConfigMapName is the ConfigMap the root CA publisher keeps in every namespace.
	RootCACertConfigMapName = "kube-root-ca.crt"
	// tokenExpirationSeconds is kube-apiserver's WarnOnlyBoundTokenExpirationSeconds: an hour
	// and seven seconds, odd so that the API server can tell a token of this volume.
	tokenExpirationSeconds = 60*60 + 7
)

// mirrorPodAnnotation marks the API's copy of a node's static pod; such pods may not refer
// to API objects, so they get no service account.
const mirrorPodAnnotation = "kubernetes.io/config.mirror"

func registerServiceAccount(plugins *admission.Plugins) {
	plugins.Register(ServiceAccountPluginName, func(io.Reader) (admission.Interface, error) {
		return newServiceAccount(), nil
	})
}

// serviceAccount gives a new pod the namespace's default service account, refuses a pod
// whose service account does not exist (yet) — that is why clients wait for "default" to
// appear in a new namespace — mounts the account's API credentials into its containers (the
// kube-api-access-<random> volume) and its image pull secrets into the pod. For an account
// annotated kubernetes.io/enforce-mountable-secrets it also refuses pods, and ephemeral
// containers, that use secrets the account does not list.
type serviceAccount struct {
	*admission.Handler
	lister corelisters.ServiceAccountLister
	client kubernetes.Interface
	// generateName picks the token volume's name from its prefix; fixed in tests.
	generateName func(string) string
}

var (
	_ admission.MutationInterface                                  = &serviceAccount{}
	_ admission.ValidationInterface                                = &serviceAccount{}
	_ genericadmissioninitializer.WantsExternalKubeInformerFactory = &serviceAccount{}
	_ genericadmissioninitializer.WantsExternalKubeClientSet       = &serviceAccount{}
)

func newServiceAccount() *serviceAccount {
	return &serviceAccount{
		Handler:      admission.NewHandler(admission.Create, admission.Update),
		generateName: names.SimpleNameGenerator.GenerateName,
	}
}

func (p *serviceAccount) SetExternalKubeInformerFactory(f informers.SharedInformerFactory) {
	informer := f.Core().V1().ServiceAccounts()
	p.lister = informer.Lister()
	p.SetReadyFunc(informer.Informer().HasSynced)
}

func (p *serviceAccount) SetExternalKubeClientSet(c kubernetes.Interface) { p.client = c }

func (p *serviceAccount) ValidateInitialization() error {
	if p.lister == nil || p.client == nil {
		return errors.New("missing service account lister or client")
	}
	return nil
}

// podOf is the request's pod, or nil when the plugin has nothing to do with the request: it
// looks at pods themselves and at their ephemeralcontainers subresource.
func podOf(a admission.Attributes) *corev1.Pod {
	if a.GetResource().GroupResource() != corev1.Resource("pods") || (a.GetSubresource() != "" && a.GetSubresource() != "ephemeralcontainers") {
		return nil
	}
	pod, _ := a.GetObject().(*corev1.Pod)
	return pod
}

func (p *serviceAccount) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	pod := podOf(a)
	// Only a new pod's spec is changed.
	if pod == nil || a.GetOperation() != admission.Create {
		return nil
	}
	// A mirror pod must stay as its node wrote it (the node would delete a changed one).
	if _, mirror := pod.Annotations[mirrorPodAnnotation]; mirror {
		return p.Validate(ctx, a, o)
	}
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = DefaultServiceAccountName
		pod.Spec.DeprecatedServiceAccount = DefaultServiceAccountName
	}
	if !p.WaitForReady() {
		return admission.NewForbidden(a, errors.New("not yet ready to handle request"))
	}
	sa, err := p.get(ctx, a.GetNamespace(), pod.Spec.ServiceAccountName)
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("error looking up service account %s/%s: %w", a.GetNamespace(), pod.Spec.ServiceAccountName, err))
	}
	if shouldAutomount(sa, pod) {
		mountServiceAccountToken(pod, p.generateName)
	}
	if len(pod.Spec.ImagePullSecrets) == 0 {
		pod.Spec.ImagePullSecrets = make([]corev1.LocalObjectReference, len(sa.ImagePullSecrets))
		for i, s := range sa.ImagePullSecrets {
			pod.Spec.ImagePullSecrets[i].Name = s.Name
		}
	}
	return p.Validate(ctx, a, o)
}

func (p *serviceAccount) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	pod := podOf(a)
	if pod == nil {
		return nil
	}
	if a.GetOperation() == admission.Update && a.GetSubresource() == "ephemeralcontainers" {
		return p.validateEphemeralContainers(ctx, a, pod)
	}
	if a.GetOperation() != admission.Create {
		return nil
	}
	if _, mirror := pod.Annotations[mirrorPodAnnotation]; mirror {
		return validateMirrorPod(a, pod)
	}
	sa, err := p.account(ctx, a, pod)
	if err != nil {
		return err
	}
	if enforceMountableSecrets(sa) {
		if err := limitSecretReferences(sa, pod); err != nil {
			return admission.NewForbidden(a, err)
		}
	}
	return nil
}

// account is the pod's existing service account, or the Forbidden error that refuses the pod.
func (p *serviceAccount) account(ctx context.Context, a admission.Attributes, pod *corev1.Pod) (*corev1.ServiceAccount, error) {
	if pod.Spec.ServiceAccountName == "" {
		return nil, admission.NewForbidden(a, fmt.Errorf("no service account specified for pod %s/%s", a.GetNamespace(), pod.Name))
	}
	if !p.WaitForReady() {
		return nil, admission.NewForbidden(a, errors.New("not yet ready to handle request"))
	}
	sa, err := p.get(ctx, a.GetNamespace(), pod.Spec.ServiceAccountName)
	if err != nil {
		return nil, admission.NewForbidden(a, fmt.Errorf("error looking up service account %s/%s: %w", a.GetNamespace(), pod.Spec.ServiceAccountName, err))
	}
	return sa, nil
}

// validateMirrorPod refuses a mirror pod that refers to API credentials: its node could read
// them through it.
func validateMirrorPod(a admission.Attributes, pod *corev1.Pod) error {
	if pod.Spec.ServiceAccountName != "" {
		return admission.NewForbidden(a, errors.New("a mirror pod may not reference service accounts"))
	}
	if usesSecrets(pod) {
		return admission.NewForbidden(a, errors.New("a mirror pod may not reference secrets"))
	}
	for _, v := range pod.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, s := range v.Projected.Sources {
			if s.ServiceAccountToken != nil {
				return admission.NewForbidden(a, errors.New("a mirror pod may not use ServiceAccountToken volume projections"))
			}
		}
	}
	return nil
}

// validateEphemeralContainers checks the ephemeral containers being added against the
// account's mountable secrets.
func (p *serviceAccount) validateEphemeralContainers(ctx context.Context, a admission.Attributes, pod *corev1.Pod) error {
	sa, err := p.account(ctx, a, pod)
	if err != nil || !enforceMountableSecrets(sa) {
		return err
	}
	mountable := secretNames(sa.Secrets)
	for i := range pod.Spec.EphemeralContainers {
		c := &pod.Spec.EphemeralContainers[i]
		if err := limitEnvSecrets("ephemeral container", c.Name, c.Env, c.EnvFrom, mountable, sa.Name); err != nil {
			// Kubernetes returns this one bare, not as Forbidden.
			return err
		}
	}
	return nil
}

func shouldAutomount(sa *corev1.ServiceAccount, pod *corev1.Pod) bool {
	// The pod's choice wins over its account's; both unset means yes.
	if pod.Spec.AutomountServiceAccountToken != nil {
		return *pod.Spec.AutomountServiceAccountToken
	}
	if sa.AutomountServiceAccountToken != nil {
		return *sa.AutomountServiceAccountToken
	}
	return true
}

func enforceMountableSecrets(sa *corev1.ServiceAccount) bool {
	enforce, _ := strconv.ParseBool(sa.Annotations[EnforceMountableSecretsAnnotation])
	return enforce
}

func secretNames(refs []corev1.ObjectReference) map[string]bool {
	out := map[string]bool{}
	for _, r := range refs {
		out[r.Name] = true
	}
	return out
}

// limitSecretReferences refuses secret volumes, env from secrets and image pull secrets the
// account does not list, with Kubernetes' messages.
func limitSecretReferences(sa *corev1.ServiceAccount, pod *corev1.Pod) error {
	mountable := secretNames(sa.Secrets)
	for _, v := range pod.Spec.Volumes {
		if v.Secret != nil && !mountable[v.Secret.SecretName] {
			return fmt.Errorf("volume with secret.secretName=\"%s\" is not allowed because service account %s does not reference that secret", v.Secret.SecretName, sa.Name)
		}
	}
	for _, c := range pod.Spec.InitContainers {
		if err := limitEnvSecrets("init container", c.Name, c.Env, c.EnvFrom, mountable, sa.Name); err != nil {
			return err
		}
	}
	for _, c := range pod.Spec.Containers {
		if err := limitEnvSecrets("container", c.Name, c.Env, c.EnvFrom, mountable, sa.Name); err != nil {
			return err
		}
	}
	pullSecrets := map[string]bool{}
	for _, s := range sa.ImagePullSecrets {
		pullSecrets[s.Name] = true
	}
	for i, ref := range pod.Spec.ImagePullSecrets {
		if !pullSecrets[ref.Name] {
			return fmt.Errorf(`imagePullSecrets[%d].name="%s" is not allowed because service account %s does not reference that imagePullSecret`, i, ref.Name, sa.Name)
		}
	}
	return nil
}

func limitEnvSecrets(kind, container string, env []corev1.EnvVar, envFrom []corev1.EnvFromSource, mountable map[string]bool, account string) error {
	for _, e := range env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && !mountable[e.ValueFrom.SecretKeyRef.Name] {
			return fmt.Errorf("%s %s with envVar %s referencing secret.secretName=\"%s\" is not allowed because service account %s does not reference that secret", kind, container, e.Name, e.ValueFrom.SecretKeyRef.Name, account)
		}
	}
	for _, e := range envFrom {
		if e.SecretRef != nil && !mountable[e.SecretRef.Name] {
			return fmt.Errorf("%s %s with envFrom referencing secret.secretName=\"%s\" is not allowed because service account %s does not reference that secret", kind, container, e.SecretRef.Name, account)
		}
	}
	return nil
}

// usesSecrets reports whether the pod refers to any secret: image pull secrets, env of any
// container, and every volume type that takes one.
func usesSecrets(pod *corev1.Pod) bool {
	if len(pod.Spec.ImagePullSecrets) > 0 {
		return true
	}
	envUses := func(env []corev1.EnvVar, envFrom []corev1.EnvFromSource) bool {
		for _, e := range envFrom {
			if e.SecretRef != nil {
				return true
			}
		}
		for _, e := range env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				return true
			}
		}
		return false
	}
	for _, c := range pod.Spec.InitContainers {
		if envUses(c.Env, c.EnvFrom) {
			return true
		}
	}
	for _, c := range pod.Spec.Containers {
		if envUses(c.Env, c.EnvFrom) {
			return true
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if envUses(c.Env, c.EnvFrom) {
			return true
		}
	}
	for _, v := range pod.Spec.Volumes {
		s := v.VolumeSource
		switch {
		case s.AzureFile != nil && s.AzureFile.SecretName != "", s.Secret != nil,
			s.CephFS != nil && s.CephFS.SecretRef != nil,
			s.Cinder != nil && s.Cinder.SecretRef != nil,
			s.FlexVolume != nil && s.FlexVolume.SecretRef != nil,
			s.RBD != nil && s.RBD.SecretRef != nil,
			s.ScaleIO != nil && s.ScaleIO.SecretRef != nil,
			s.ISCSI != nil && s.ISCSI.SecretRef != nil,
			s.StorageOS != nil && s.StorageOS.SecretRef != nil,
			s.CSI != nil && s.CSI.NodePublishSecretRef != nil:
			return true
		case s.Projected != nil:
			for _, p := range s.Projected.Sources {
				if p.Secret != nil {
					return true
				}
			}
		}
	}
	return false
}

// mountServiceAccountToken mounts the kube-api-access volume read-only at
// DefaultAPITokenMountPath in every init and app container that mounts nothing there
// (ephemeral containers are added later and choose their own mounts). A pod that already has
// a kube-api-access-* volume keeps it; the volume is added only if a container mounts it.
func mountServiceAccountToken(pod *corev1.Pod, generateName func(string) string) {
	name := ""
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, ServiceAccountVolumeName+"-") {
			name = v.Name
			break
		}
	}
	hasVolume := name != ""
	if !hasVolume {
		name = generateName(ServiceAccountVolumeName + "-")
	}
	mount := corev1.VolumeMount{Name: name, ReadOnly: true, MountPath: DefaultAPITokenMountPath}
	needed := false
	addTo := func(c *corev1.Container) {
		for _, m := range c.VolumeMounts {
			if m.MountPath == DefaultAPITokenMountPath {
				return
			}
		}
		c.VolumeMounts = append(c.VolumeMounts, mount)
		needed = true
	}
	for i := range pod.Spec.InitContainers {
		addTo(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		addTo(&pod.Spec.Containers[i])
	}
	if !hasVolume && needed {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{
			Name:         name,
			VolumeSource: corev1.VolumeSource{Projected: TokenVolumeSource()},
		})
	}
}

// TokenVolumeSource is the kube-api-access volume: the bound token, the cluster CA and the
// namespace, with the default mode set explicitly as Kubernetes sets it.
func TokenVolumeSource() *corev1.ProjectedVolumeSource {
	return &corev1.ProjectedVolumeSource{
		DefaultMode: ptr.To[int32](corev1.ProjectedVolumeSourceDefaultMode),
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](tokenExpirationSeconds)}},
			{ConfigMap: &corev1.ConfigMapProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: RootCACertConfigMapName},
				Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
			}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{
				Path:     "namespace",
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"},
			}}}},
		},
	}
}

// get reads the account from the informer's cache and, when the cache has not seen it yet
// (it was created a moment ago), from the API: ten times for "default", which the service
// account controller is about to create in a new namespace, once for others.
func (p *serviceAccount) get(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	sa, err := p.lister.ServiceAccounts(namespace).Get(name)
	if err == nil || !apierrors.IsNotFound(err) {
		return sa, err
	}
	attempts := 1
	if name == DefaultServiceAccountName {
		attempts = 10
	}
	interval := time.Duration(100+rand.N(100)) * time.Millisecond
	for i := range attempts {
		if i > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(interval):
			}
		}
		sa, err := p.client.CoreV1().ServiceAccounts(namespace).Get(ctx, name, metav1.GetOptions{})
		if err == nil || !apierrors.IsNotFound(err) {
			return sa, err
		}
	}
	// Kubernetes names the resource in the singular here.
	return nil, apierrors.NewNotFound(corev1.Resource("serviceaccount"), name)
}
