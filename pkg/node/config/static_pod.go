package config

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"

	podregistry "github.com/berth-cluster/berth/pkg/apiserver/registry/core/pod"
	"github.com/berth-cluster/berth/pkg/node/types"
)

const (
	// maxConfigLength is the largest manifest file or URL body read.
	maxConfigLength = 10 << 20
	// nodeCriticalPriority is the priority of the system-node-critical class.
	nodeCriticalPriority = 2000000000 + 1000
	systemNodeCritical   = "system-node-critical"
)

// staticPodDefaulter turns a decoded manifest into the pod the node agent runs, as the
// kubelet's applyDefaults does: the API's defaults, a UID hashed from the manifest, the node
// and the source (unless the manifest has one), the name <name>-<node>, the default
// namespace, spec.nodeName, the kubernetes.io/config.hash annotation (the UID), a toleration
// of every NoExecute taint for file pods, and phase Pending. It then validates the pod as
// the API server would on create, and refuses pods that need objects from the API (a static
// pod must run without the API server).
type staticPodDefaulter struct {
	nodeName string
	fromFile bool
	// source is the manifest's file path or URL.
	source string
}

func (d staticPodDefaulter) prepare(logger klog.Logger, pod *v1.Pod) error {
	if pod.Name == "" {
		return errors.New("invalid pod: name is needed for the pod")
	}
	podregistry.SetDefaults(pod)
	if pod.UID == "" {
		pod.UID = d.hash(pod)
	}
	pod.Name = fmt.Sprintf("%s-%s", pod.Name, strings.ToLower(d.nodeName))
	if pod.Namespace == "" {
		pod.Namespace = metav1.NamespaceDefault
	}
	pod.Spec.NodeName = d.nodeName
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[types.ConfigHashAnnotationKey] = string(pod.UID)
	if d.fromFile {
		addOrUpdateToleration(pod, v1.Toleration{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute})
	}
	pod.Status.Phase = v1.PodPending

	if errs := podregistry.ValidatePod(pod); len(errs) > 0 {
		return fmt.Errorf("invalid pod: %v", errs)
	}
	resource, err := apiObjectReference(pod)
	if err != nil {
		return err
	}
	if resource != "" {
		return fmt.Errorf("static pods may not reference %s", resource)
	}
	if w := priorityWarning(pod); w != "" {
		logger.Info(w, "pod", klog.KObj(pod))
	}
	return nil
}

// hash is the static pod's UID: FNV-128a of the defaulted manifest and where it came from,
// so the same manifest on the same node from the same place always has the same UID, and a
// changed manifest is a new pod.
func (d staticPodDefaulter) hash(pod *v1.Pod) ktypes.UID {
	h := fnv.New128a()
	data, err := json.Marshal(pod)
	if err != nil {
		// A decoded pod always marshals; fall back to its printed form all the same.
		data = []byte(fmt.Sprintf("%#v", pod))
	}
	h.Write(data)
	if d.fromFile {
		fmt.Fprintf(h, "host:%s", d.nodeName)
		fmt.Fprintf(h, "file:%s", d.source)
	} else {
		fmt.Fprintf(h, "url:%s", d.source)
	}
	return ktypes.UID(hex.EncodeToString(h.Sum(nil)))
}

// decodeSinglePod reads data (YAML or JSON) as one Pod and prepares it. parsed says the data
// was a Pod, valid or not.
func (d staticPodDefaulter) decodeSinglePod(logger klog.Logger, data []byte) (parsed bool, pod *v1.Pod, err error) {
	obj, err := decode(data)
	if err != nil {
		return false, nil, err
	}
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return false, nil, fmt.Errorf("invalid pod: got a %T", obj)
	}
	if err := d.prepare(logger, pod); err != nil {
		return true, nil, err
	}
	return true, pod, nil
}

// decodePodList reads data as a PodList and prepares every pod; one bad pod fails them all.
func (d staticPodDefaulter) decodePodList(logger klog.Logger, data []byte) (parsed bool, pods []*v1.Pod, err error) {
	obj, err := decode(data)
	if err != nil {
		return false, nil, err
	}
	list, ok := obj.(*v1.PodList)
	if !ok {
		return false, nil, fmt.Errorf("invalid pods list: got a %T", obj)
	}
	pods = make([]*v1.Pod, 0, len(list.Items))
	for i := range list.Items {
		pod := &list.Items[i]
		if err := d.prepare(logger, pod); err != nil {
			return true, nil, err
		}
		pods = append(pods, pod)
	}
	return true, pods, nil
}

func decode(data []byte) (interface{}, error) {
	js, err := utilyaml.ToJSON(data)
	if err != nil {
		return nil, err
	}
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(js, nil, nil)
	if err != nil {
		return nil, err
	}
	return obj, nil
}

// readAtMost reads r up to limit bytes and fails beyond.
func readAtMost(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("the read limit of %d bytes is reached", limit)
	}
	return data, nil
}

// addOrUpdateToleration adds t to the pod, replacing a toleration that matches it (same
// key, operator, value and effect) but differs in its seconds.
func addOrUpdateToleration(pod *v1.Pod, t v1.Toleration) {
	for i := range pod.Spec.Tolerations {
		if pod.Spec.Tolerations[i].MatchToleration(&t) {
			pod.Spec.Tolerations[i] = t
			return
		}
	}
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, t)
}

// priorityWarning says when a static pod's priority will trouble its mirror pod, in the
// kubelet's words.
func priorityWarning(pod *v1.Pod) string {
	spec := &pod.Spec
	switch {
	case spec.Priority == nil && spec.PriorityClassName != "":
		return "Static pod has priorityClassName and nil priority. Kubelet will not use priorityClassName, and mirror pod creation may fail."
	case spec.Priority != nil && spec.PriorityClassName == "":
		return "Static pod has priority without priorityClassName. Mirror pod creation may fail if the default priority class doesn't match the given priority."
	case spec.Priority != nil && (*spec.Priority != nodeCriticalPriority || spec.PriorityClassName != systemNodeCritical):
		return fmt.Sprintf("Static pod has a priority other than %d or a priorityClassName other than %s. Mirror pod may be attempted to be evicted from the node ineffectively.", nodeCriticalPriority, systemNodeCritical)
	}
	return ""
}

// apiObjectReference names the kind of API object the pod needs ("" for none): service
// accounts, secrets, config maps, resource claims and the volumes that need them.
func apiObjectReference(pod *v1.Pod) (string, error) {
	spec := &pod.Spec
	if spec.ServiceAccountName != "" {
		return "serviceaccounts", nil
	}
	if usesSecrets(spec) {
		return "secrets", nil
	}
	if usesConfigMaps(spec) {
		return "configmaps", nil
	}
	if len(spec.ResourceClaims) > 0 {
		return "resourceclaims", nil
	}
	for _, v := range spec.Volumes {
		switch {
		case v.ConfigMap != nil:
			return "configmaps (via configmap volumes)", nil
		case v.Secret != nil:
			return "secrets (via secret volumes)", nil
		case v.CSI != nil:
			return "csidrivers (via CSI volumes)", nil
		case v.Glusterfs != nil:
			return "endpoints (via glusterFS volumes)", nil
		case v.PersistentVolumeClaim != nil:
			return "persistentvolumeclaims", nil
		case v.Ephemeral != nil:
			return "persistentvolumeclaims (via ephemeral volumes)", nil
		case v.AzureFile != nil:
			return "secrets (via azureFile volumes)", nil
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				switch {
				case s.ConfigMap != nil:
					return "configmaps (via projected volumes)", nil
				case s.Secret != nil:
					return "secrets (via projected volumes)", nil
				case s.ServiceAccountToken != nil:
					return "serviceaccounts (via projected volumes)", nil
				case s.ClusterTrustBundle != nil:
					return "clustertrustbundles", nil
				case s.PodCertificate != nil:
					return "podcertificates", nil
				case s.DownwardAPI != nil:
				default:
					return "", fmt.Errorf("unknown source for projected volume %q", v.Name)
				}
			}
		case v.AWSElasticBlockStore != nil, v.AzureDisk != nil, v.CephFS != nil, v.Cinder != nil,
			v.DownwardAPI != nil, v.EmptyDir != nil, v.FC != nil, v.FlexVolume != nil, v.Flocker != nil,
			v.GCEPersistentDisk != nil, v.GitRepo != nil, v.HostPath != nil, v.Image != nil, v.ISCSI != nil,
			v.NFS != nil, v.PhotonPersistentDisk != nil, v.PortworxVolume != nil, v.Quobyte != nil, v.RBD != nil,
			v.ScaleIO != nil, v.StorageOS != nil, v.VsphereVolume != nil:
		default:
			return "", fmt.Errorf("unknown volume type for volume %q", v.Name)
		}
	}
	return "", nil
}

// allContainers calls fn with the env and envFrom of every container of the pod.
func allContainers(spec *v1.PodSpec, fn func(env []v1.EnvVar, envFrom []v1.EnvFromSource) bool) bool {
	for _, c := range spec.InitContainers {
		if fn(c.Env, c.EnvFrom) {
			return true
		}
	}
	for _, c := range spec.Containers {
		if fn(c.Env, c.EnvFrom) {
			return true
		}
	}
	for _, c := range spec.EphemeralContainers {
		if fn(c.Env, c.EnvFrom) {
			return true
		}
	}
	return false
}

func usesSecrets(spec *v1.PodSpec) bool {
	if len(spec.ImagePullSecrets) > 0 {
		return true
	}
	if allContainers(spec, func(env []v1.EnvVar, envFrom []v1.EnvFromSource) bool {
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
	}) {
		return true
	}
	for _, v := range spec.Volumes {
		s := v.VolumeSource
		switch {
		case s.AzureFile != nil, s.Secret != nil,
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

func usesConfigMaps(spec *v1.PodSpec) bool {
	if allContainers(spec, func(env []v1.EnvVar, envFrom []v1.EnvFromSource) bool {
		for _, e := range envFrom {
			if e.ConfigMapRef != nil {
				return true
			}
		}
		for _, e := range env {
			if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
				return true
			}
		}
		return false
	}) {
		return true
	}
	for _, v := range spec.Volumes {
		if v.ConfigMap != nil {
			return true
		}
		if v.Projected != nil {
			for _, p := range v.Projected.Sources {
				if p.ConfigMap != nil {
					return true
				}
			}
		}
	}
	return false
}
