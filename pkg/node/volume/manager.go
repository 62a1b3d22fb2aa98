// Package volume sets up the pod volumes whose contents come from the API: configMap, secret,
// downwardAPI and projected (seed 000's volumeManager, for these plugins), the projected
// volume's serviceAccountToken sources included (tokens from pkg/node/token), and its
// clusterTrustBundle and podCertificate sources (pkg/node/clustertrustbundle and
// pkg/node/podcertificate). A volume is
// written when a container that mounts it is created, and rewritten every resync period while
// its pod runs, so that changes to a ConfigMap or Secret, and renewed tokens, reach the files;
// each write swaps the whole volume at once through a "..data" symlink. Secrets and tokens
// live on tmpfs, never on disk; so do pod certificates' private keys.
package volume

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/node/container"
	"github.com/berth-cluster/berth/pkg/util/panics"
)

// ResyncPeriod is how often the volumes of running pods are rewritten from the API.
const ResyncPeriod = 20 * time.Second

// ObjectGetter reads the ConfigMaps and Secrets volumes refer to.
type ObjectGetter interface {
	GetConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error)
	GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error)
}

// TokenGetter gets the bound service-account tokens of serviceAccountToken sources and
// forgets a pod's (pkg/node/token's Manager). It answers a cached token until the token needs
// renewing, so the resync may ask every period.
type TokenGetter interface {
	GetServiceAccountToken(ctx context.Context, namespace, name string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error)
	DeleteServiceAccountToken(podUID types.UID)
}

// TrustAnchorGetter answers clusterTrustBundle sources (pkg/node/clustertrustbundle's
// Manager): the PEM certificates of a bundle by name, or of a signer's bundles whose labels
// match; nothing found is empty when allowMissing, else an error.
type TrustAnchorGetter interface {
	GetTrustAnchorsByName(ctx context.Context, name string, allowMissing bool) ([]byte, error)
	GetTrustAnchorsBySigner(ctx context.Context, signerName string, selector *metav1.LabelSelector, allowMissing bool) ([]byte, error)
}

// PodCertificateGetter answers podCertificate sources (pkg/node/podcertificate's Manager):
// the PEM private key and certificate chain of a pod's source, waiting up to wait for the
// first ones; and forgets a pod's sources.
type PodCertificateGetter interface {
	GetPodCertificateCredentialBundle(ctx context.Context, pod *v1.Pod, volumeName string, sourceIndex int, source *v1.PodCertificateProjection, wait time.Duration) (key, chain []byte, err error)
	ForgetPod(uid types.UID)
}

// IssueWait is how long a volume's first setup waits for a pod certificate to be issued
// before it fails (and is tried again at the pod's next sync); the resync never waits.
const IssueWait = 30 * time.Second

// Manager writes the API-backed volumes of pods under RootDir/pods/<uid>/volumes.
type Manager struct {
	podsDir     string
	objects     ObjectGetter
	tokens      TokenGetter
	allocatable func() v1.ResourceList
	// trustAnchors and podCerts answer clusterTrustBundle and podCertificate sources; nil:
	// such a source fails.
	trustAnchors TrustAnchorGetter
	podCerts     PodCertificateGetter

	mu sync.Mutex
	// set up: pod UID → the pod, for the resync.
	pods map[types.UID]*v1.Pod
}

// NewManager returns a Manager for the pods under podsDir; allocatable answers the
// downward API's limits of a container that sets none.
func NewManager(podsDir string, objects ObjectGetter, tokens TokenGetter, allocatable func() v1.ResourceList) *Manager {
	return &Manager{podsDir: podsDir, objects: objects, tokens: tokens, allocatable: allocatable, pods: map[types.UID]*v1.Pod{}}
}

// SetCertificates gives the manager what answers clusterTrustBundle and podCertificate
// sources; call it before the first SetUpVolume.
func (m *Manager) SetCertificates(trustAnchors TrustAnchorGetter, podCerts PodCertificateGetter) {
	m.trustAnchors, m.podCerts = trustAnchors, podCerts
}

// The kubelet's directory names of the volume plugins, under a pod's volumes directory.
const (
	EmptyDirPlugin    = "kubernetes.io~empty-dir"
	ConfigMapPlugin   = "kubernetes.io~configmap"
	SecretPlugin      = "kubernetes.io~secret"
	DownwardAPIPlugin = "kubernetes.io~downward-api"
	ProjectedPlugin   = "kubernetes.io~projected"
)

// Dir is where a pod's volume lives: podDir/volumes/<plugin>/<name>.
func Dir(podDir, plugin, name string) string {
	return filepath.Join(podDir, "volumes", plugin, name)
}

// pluginDir is the plugin directory of the volume types this manager sets up; "" for others.
func pluginDir(vol *v1.Volume) string {
	switch {
	case vol.ConfigMap != nil:
		return ConfigMapPlugin
	case vol.Secret != nil:
		return SecretPlugin
	case vol.DownwardAPI != nil:
		return DownwardAPIPlugin
	case vol.Projected != nil:
		return ProjectedPlugin
	}
	return ""
}

// SetUpVolume writes the volume and returns its host path, mounted read-only in containers
// as the kubelet does for these types. ok is false for a volume type it does not handle.
func (m *Manager) SetUpVolume(ctx context.Context, pod *v1.Pod, vol *v1.Volume) (path string, readOnly, ok bool, err error) {
	plugin := pluginDir(vol)
	if plugin == "" {
		return "", false, false, nil
	}
	dir := Dir(filepath.Join(m.podsDir, string(pod.UID)), plugin, vol.Name)
	if err := m.setUp(context.WithValue(ctx, issueWaitKey{}, IssueWait), pod, vol, dir); err != nil {
		return "", true, true, fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", vol.Name, err)
	}
	m.mu.Lock()
	m.pods[pod.UID] = pod
	m.mu.Unlock()
	return dir, true, true, nil
}

func (m *Manager) setUp(ctx context.Context, pod *v1.Pod, vol *v1.Volume, dir string) error {
	payload, err := m.payload(ctx, pod, vol)
	if err != nil {
		return err
	}
	if vol.Secret != nil || (vol.Projected != nil && hasSecret(vol.Projected)) {
		if err := ensureTmpfs(dir); err != nil {
			return err
		}
	}
	if err := writePayload(dir, payload); err != nil {
		return err
	}
	return SetOwnership(dir, pod, true)
}

func hasSecret(p *v1.ProjectedVolumeSource) bool {
	for _, s := range p.Sources {
		if s.Secret != nil || s.ServiceAccountToken != nil || s.PodCertificate != nil {
			return true
		}
	}
	return false
}

// ensureTmpfs mounts a tmpfs on dir unless one is there.
func ensureTmpfs(dir string) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return err
	}
	const tmpfsMagic = 0x01021994
	if st.Type == tmpfsMagic {
		return nil
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "mode=0755"); err != nil {
		return fmt.Errorf("mounting a tmpfs on %s: %w", dir, err)
	}
	return nil
}

// Resync rewrites the volumes of the pods active says are still running, until ctx ends,
// and forgets the others.
func (m *Manager) Run(ctx context.Context, active func(types.UID) bool) {
	t := time.NewTicker(ResyncPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		m.resync(ctx, active)
	}
}

// resync rewrites the volumes of the active pods once and forgets the others.
func (m *Manager) resync(ctx context.Context, active func(types.UID) bool) {
	m.mu.Lock()
	pods := make([]*v1.Pod, 0, len(m.pods))
	for uid, pod := range m.pods {
		if active(uid) {
			pods = append(pods, pod)
		} else {
			// Its containers are gone: so is its need for tokens (the kubelet drops them
			// when it tears the projected volume down).
			delete(m.pods, uid)
			m.tokens.DeleteServiceAccountToken(uid)
			if m.podCerts != nil {
				m.podCerts.ForgetPod(uid)
			}
		}
	}
	m.mu.Unlock()
	start := time.Now()
	defer func() {
		// Tokens are renewed here: a resync slower than its period eats into their margin.
		if took := time.Since(start); took > ResyncPeriod {
			klog.FromContext(ctx).Info("Refreshing the pods' volumes took longer than its period", "pods", len(pods), "took", took.Round(time.Millisecond), "period", ResyncPeriod)
		}
	}()
	for _, pod := range pods {
		for i := range pod.Spec.Volumes {
			vol := &pod.Spec.Volumes[i]
			plugin := pluginDir(vol)
			if plugin == "" {
				continue
			}
			dir := Dir(filepath.Join(m.podsDir, string(pod.UID)), plugin, vol.Name)
			if _, err := os.Stat(dir); err != nil {
				continue // no container mounted it yet
			}
			// A fault in one volume's refresh is that volume's: logged, tried next period.
			if err := panics.Call(ctx, Component, func() error { return m.setUp(ctx, pod, vol, dir) }); err != nil {
				klog.FromContext(ctx).Error(err, "Refreshing a volume failed", "pod", klog.KObj(pod), "volume", vol.Name)
			}
		}
	}
}

// UpdatePod gives the resync the pod's newest spec (labels and annotations for the
// downward API).
func (m *Manager) UpdatePod(pod *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.pods[pod.UID]; ok {
		m.pods[pod.UID] = pod
	}
}

// payload is the volume's files.
func (m *Manager) payload(ctx context.Context, pod *v1.Pod, vol *v1.Volume) (map[string]FileProjection, error) {
	switch {
	case vol.ConfigMap != nil:
		return m.configMapPayload(ctx, pod, vol.ConfigMap.Name, vol.ConfigMap.Items, vol.ConfigMap.Optional, mode(vol.ConfigMap.DefaultMode))
	case vol.Secret != nil:
		return m.secretPayload(ctx, pod, vol.Secret.SecretName, vol.Secret.Items, vol.Secret.Optional, mode(vol.Secret.DefaultMode))
	case vol.DownwardAPI != nil:
		return m.downwardAPIPayload(pod, vol.DownwardAPI.Items, mode(vol.DownwardAPI.DefaultMode))
	case vol.Projected != nil:
		return m.projectedPayload(ctx, pod, vol.Name, vol.Projected)
	}
	return nil, errors.New("unsupported volume type")
}

func mode(m *int32) int32 {
	if m == nil {
		return 0o644
	}
	return *m
}

func (m *Manager) configMapPayload(ctx context.Context, pod *v1.Pod, name string, items []v1.KeyToPath, optional *bool, defaultMode int32) (map[string]FileProjection, error) {
	cm, err := m.objects.GetConfigMap(ctx, pod.Namespace, name)
	if err != nil {
		if apierrors.IsNotFound(err) && optional != nil && *optional {
			return map[string]FileProjection{}, nil
		}
		return nil, err
	}
	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return keysToFiles(data, items, optional, defaultMode, "configmap")
}

func (m *Manager) secretPayload(ctx context.Context, pod *v1.Pod, name string, items []v1.KeyToPath, optional *bool, defaultMode int32) (map[string]FileProjection, error) {
	s, err := m.objects.GetSecret(ctx, pod.Namespace, name)
	if err != nil {
		if apierrors.IsNotFound(err) && optional != nil && *optional {
			return map[string]FileProjection{}, nil
		}
		return nil, err
	}
	return keysToFiles(s.Data, items, optional, defaultMode, "secret")
}

// keysToFiles maps an object's keys to files: all of them, or the items asked for.
func keysToFiles(data map[string][]byte, items []v1.KeyToPath, optional *bool, defaultMode int32, kind string) (map[string]FileProjection, error) {
	out := map[string]FileProjection{}
	if len(items) == 0 {
		for k, v := range data {
			out[k] = FileProjection{Data: v, Mode: defaultMode}
		}
		return out, nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if optional != nil && *optional {
				continue
			}
			return nil, fmt.Errorf("%s references non-existent %s key: %s", kind, map[string]string{"configmap": "config", "secret": "secret"}[kind], it.Key)
		}
		out[it.Path] = FileProjection{Data: v, Mode: mode2(it.Mode, defaultMode)}
	}
	return out, nil
}

func mode2(m *int32, def int32) int32 {
	if m != nil {
		return *m
	}
	return def
}

func (m *Manager) downwardAPIPayload(pod *v1.Pod, items []v1.DownwardAPIVolumeFile, defaultMode int32) (map[string]FileProjection, error) {
	out := map[string]FileProjection{}
	for _, it := range items {
		var value string
		var err error
		switch {
		case it.FieldRef != nil:
			value, err = podField(pod, it.FieldRef.FieldPath)
		case it.ResourceFieldRef != nil:
			value, err = m.resourceField(pod, it.ResourceFieldRef)
		}
		if err != nil {
			return nil, err
		}
		out[it.Path] = FileProjection{Data: []byte(value), Mode: mode2(it.Mode, defaultMode)}
	}
	return out, nil
}

func (m *Manager) projectedPayload(ctx context.Context, pod *v1.Pod, vol string, p *v1.ProjectedVolumeSource) (map[string]FileProjection, error) {
	defaultMode := mode(p.DefaultMode)
	out := map[string]FileProjection{}
	for i, s := range p.Sources {
		var files map[string]FileProjection
		var err error
		switch {
		case s.ConfigMap != nil:
			files, err = m.configMapPayload(ctx, pod, s.ConfigMap.Name, s.ConfigMap.Items, s.ConfigMap.Optional, defaultMode)
		case s.Secret != nil:
			files, err = m.secretPayload(ctx, pod, s.Secret.Name, s.Secret.Items, s.Secret.Optional, defaultMode)
		case s.DownwardAPI != nil:
			files, err = m.downwardAPIPayload(pod, s.DownwardAPI.Items, defaultMode)
		case s.ServiceAccountToken != nil:
			files, err = m.tokenPayload(ctx, pod, s.ServiceAccountToken, defaultMode)
		case s.ClusterTrustBundle != nil:
			files, err = m.trustBundlePayload(ctx, pod, s.ClusterTrustBundle, defaultMode)
		case s.PodCertificate != nil:
			files, err = m.podCertificatePayload(ctx, pod, vol, i, s.PodCertificate, defaultMode)
		default:
			err = errors.New("this projected volume source is not supported by berth's node agent")
		}
		if err != nil {
			return nil, err
		}
		for k, v := range files {
			out[k] = v
		}
	}
	return out, nil
}

// tokenPayload is a serviceAccountToken source's file: a token of the pod's service account
// bound to the pod. When the pod's containers all run as one user, the file is that user's;
// with that user or an fsGroup it is 0600 (SetOwnership then adds the group's read), as the
// kubelet writes it, so that a token is not readable by every user of the container.
func (m *Manager) tokenPayload(ctx context.Context, pod *v1.Pod, src *v1.ServiceAccountTokenProjection, defaultMode int32) (map[string]FileProjection, error) {
	fsUser := fsUserOf(pod)
	mode := defaultMode
	if fsUser != nil || (pod.Spec.SecurityContext != nil && pod.Spec.SecurityContext.FSGroup != nil) {
		mode = 0o600
	}
	var audiences []string
	if src.Audience != "" {
		audiences = []string{src.Audience}
	}
	tr, err := m.tokens.GetServiceAccountToken(ctx, pod.Namespace, pod.Spec.ServiceAccountName, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			Audiences:         audiences,
			ExpirationSeconds: src.ExpirationSeconds,
			BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID},
		},
	})
	if err != nil {
		return nil, err
	}
	return map[string]FileProjection{src.Path: {Data: []byte(tr.Status.Token), Mode: mode, FsUser: fsUser}}, nil
}

// fsUserOf is the one user every container of the pod runs as (its own runAsUser, else the
// pod's), or nil when one of them names none or two differ: the kubelet's FsUserFrom.
func fsUserOf(pod *v1.Pod) *int64 {
	var user *int64
	same := true
	visit := func(sc *v1.SecurityContext) {
		var u *int64
		if sc != nil && sc.RunAsUser != nil {
			u = sc.RunAsUser
		} else if pod.Spec.SecurityContext != nil {
			u = pod.Spec.SecurityContext.RunAsUser
		}
		switch {
		case u == nil || (user != nil && *user != *u):
			same = false
		case user == nil:
			user = u
		}
	}
	for i := range pod.Spec.InitContainers {
		visit(pod.Spec.InitContainers[i].SecurityContext)
	}
	for i := range pod.Spec.Containers {
		visit(pod.Spec.Containers[i].SecurityContext)
	}
	for i := range pod.Spec.EphemeralContainers {
		visit(pod.Spec.EphemeralContainers[i].SecurityContext)
	}
	if !same || user == nil {
		return nil
	}
	v := *user
	return &v
}

// podField is the downward API's value of a pod field in a volume: metadata only.
func podField(pod *v1.Pod, path string) (string, error) {
	if v, ok := container.PodMetadataField(pod, path); ok {
		return v, nil
	}
	return "", fmt.Errorf("unsupported fieldPath: %v", path)
}

// resourceField is a container's request or limit, as env's resourceFieldRef.
func (m *Manager) resourceField(pod *v1.Pod, ref *v1.ResourceFieldSelector) (string, error) {
	for i := range pod.Spec.Containers {
		if c := &pod.Spec.Containers[i]; c.Name == ref.ContainerName {
			var allocatable v1.ResourceList
			if m.allocatable != nil {
				allocatable = m.allocatable()
			}
			return container.ResourceFieldValue(ref, c, allocatable)
		}
	}
	return "", fmt.Errorf("container %s not found", ref.ContainerName)
}

// Component names the volume resync in berth_recovered_panics_total.
const Component = "volume"
