package node

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/storage/ephemeral"
)

// podRefs are the objects a bound pod lets its node read, as the upstream node authorizer's
// graph links them to the pod. A mirror pod links none: a node creates mirror pods itself, and
// a pod it may create must not grant it anything.
func podRefs(pod *corev1.Pod) []objectKey {
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return nil
	}
	var refs []objectKey
	seen := map[objectKey]bool{}
	add := func(kind objectKind, name string) {
		k := objectKey{kind: kind, namespace: pod.Namespace, name: name}
		if name != "" && !seen[k] {
			seen[k] = true
			refs = append(refs, k)
		}
	}
	// The pod's service account, whether or not it mounts a token: the node requests tokens
	// for it (serviceaccounts/token) and reads it.
	add(serviceAccountKind, pod.Spec.ServiceAccountName)
	for _, s := range pod.Spec.ImagePullSecrets {
		add(secretKind, s.Name)
	}
	forEachContainer(&pod.Spec, func(c *corev1.Container) {
		for _, e := range c.EnvFrom {
			if e.SecretRef != nil {
				add(secretKind, e.SecretRef.Name)
			}
			if e.ConfigMapRef != nil {
				add(configMapKind, e.ConfigMapRef.Name)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			if e.ValueFrom.SecretKeyRef != nil {
				add(secretKind, e.ValueFrom.SecretKeyRef.Name)
			}
			if e.ValueFrom.ConfigMapKeyRef != nil {
				add(configMapKind, e.ValueFrom.ConfigMapKeyRef.Name)
			}
		}
	})
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		for _, s := range volumeSecrets(&v.VolumeSource) {
			add(secretKind, s)
		}
		switch {
		case v.ConfigMap != nil:
			add(configMapKind, v.ConfigMap.Name)
		case v.Projected != nil:
			for _, src := range v.Projected.Sources {
				if src.ConfigMap != nil {
					add(configMapKind, src.ConfigMap.Name)
				}
			}
		case v.PersistentVolumeClaim != nil:
			add(pvcKind, v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil:
			add(pvcKind, ephemeral.VolumeClaimName(pod, v))
		}
	}
	for _, name := range podClaimNames(pod) {
		add(resourceClaimKind, name)
	}
	return refs
}

// forEachContainer visits init, regular and ephemeral containers.
func forEachContainer(spec *corev1.PodSpec, visit func(*corev1.Container)) {
	for i := range spec.InitContainers {
		visit(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		visit(&spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		visit((*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
}

// volumeSecrets are the secrets (in the pod's namespace) a volume source names.
func volumeSecrets(s *corev1.VolumeSource) []string {
	switch {
	case s.AzureFile != nil:
		return []string{s.AzureFile.SecretName}
	case s.CephFS != nil && s.CephFS.SecretRef != nil:
		return []string{s.CephFS.SecretRef.Name}
	case s.Cinder != nil && s.Cinder.SecretRef != nil:
		return []string{s.Cinder.SecretRef.Name}
	case s.FlexVolume != nil && s.FlexVolume.SecretRef != nil:
		return []string{s.FlexVolume.SecretRef.Name}
	case s.Projected != nil:
		var names []string
		for _, src := range s.Projected.Sources {
			if src.Secret != nil {
				names = append(names, src.Secret.Name)
			}
		}
		return names
	case s.RBD != nil && s.RBD.SecretRef != nil:
		return []string{s.RBD.SecretRef.Name}
	case s.Secret != nil:
		return []string{s.Secret.SecretName}
	case s.ScaleIO != nil && s.ScaleIO.SecretRef != nil:
		return []string{s.ScaleIO.SecretRef.Name}
	case s.ISCSI != nil && s.ISCSI.SecretRef != nil:
		return []string{s.ISCSI.SecretRef.Name}
	case s.StorageOS != nil && s.StorageOS.SecretRef != nil:
		return []string{s.StorageOS.SecretRef.Name}
	case s.CSI != nil && s.CSI.NodePublishSecretRef != nil:
		return []string{s.CSI.NodePublishSecretRef.Name}
	}
	return nil
}

// podClaimNames are the ResourceClaims of a pod that exist: those it names, those made for it
// from a template (once its status names them), and its extended resource claim.
func podClaimNames(pod *corev1.Pod) []string {
	var names []string
	for _, c := range pod.Spec.ResourceClaims {
		switch {
		case c.ResourceClaimName != nil:
			names = append(names, *c.ResourceClaimName)
		case c.ResourceClaimTemplateName != nil:
			for _, s := range pod.Status.ResourceClaimStatuses {
				if s.Name == c.Name && s.ResourceClaimName != nil {
					names = append(names, *s.ResourceClaimName)
					break
				}
			}
		}
	}
	if s := pod.Status.ExtendedResourceClaimStatus; s != nil && s.ResourceClaimName != "" {
		names = append(names, s.ResourceClaimName)
	}
	return names
}

// pvSecret is a secret a persistent volume names, with whether the node agent uses it (the
// controller's secrets of a CSI volume are not the node's to read).
type pvSecret struct {
	namespace, name string
	nodeVisible     bool
}

// pvSecrets are the secrets a persistent volume names. Older in-tree sources name no
// namespace; theirs is the bound claim's.
func pvSecrets(pv *corev1.PersistentVolume) []pvSecret {
	claimNS := ""
	if pv.Spec.ClaimRef != nil {
		claimNS = pv.Spec.ClaimRef.Namespace
	}
	nsOr := func(ns string) string {
		if ns != "" {
			return ns
		}
		return claimNS
	}
	ref := func(r *corev1.SecretReference) []pvSecret {
		if r == nil {
			return nil
		}
		return []pvSecret{{nsOr(r.Namespace), r.Name, true}}
	}
	s := &pv.Spec.PersistentVolumeSource
	switch {
	case s.AzureFile != nil:
		ns := claimNS
		if s.AzureFile.SecretNamespace != nil && *s.AzureFile.SecretNamespace != "" {
			ns = *s.AzureFile.SecretNamespace
		}
		return []pvSecret{{ns, s.AzureFile.SecretName, true}}
	case s.CephFS != nil:
		return ref(s.CephFS.SecretRef)
	case s.Cinder != nil && s.Cinder.SecretRef != nil:
		return []pvSecret{{s.Cinder.SecretRef.Namespace, s.Cinder.SecretRef.Name, true}}
	case s.FlexVolume != nil:
		return ref(s.FlexVolume.SecretRef)
	case s.RBD != nil:
		return ref(s.RBD.SecretRef)
	case s.ScaleIO != nil:
		return ref(s.ScaleIO.SecretRef)
	case s.ISCSI != nil:
		return ref(s.ISCSI.SecretRef)
	case s.StorageOS != nil && s.StorageOS.SecretRef != nil:
		return []pvSecret{{s.StorageOS.SecretRef.Namespace, s.StorageOS.SecretRef.Name, true}}
	case s.CSI != nil:
		var out []pvSecret
		for _, r := range []struct {
			ref         *corev1.SecretReference
			nodeVisible bool
		}{
			{s.CSI.ControllerPublishSecretRef, false},
			{s.CSI.ControllerExpandSecretRef, false},
			{s.CSI.NodePublishSecretRef, true},
			{s.CSI.NodeStageSecretRef, true},
			{s.CSI.NodeExpandSecretRef, true},
		} {
			if r.ref != nil {
				out = append(out, pvSecret{r.ref.Namespace, r.ref.Name, r.nodeVisible})
			}
		}
		return out
	}
	return nil
}
