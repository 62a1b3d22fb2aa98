package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/berth-cluster/berth/pkg/node/container"
)

// envVar is one variable of a container's environment.
type envVar struct{ Name, Value string }

// envBuilder keeps variables in the order they were first defined; a later definition of
// the same name replaces the value in place.
type envBuilder struct {
	order  []string
	values map[string]string
}

func (b *envBuilder) set(name, value string) {
	if _, ok := b.values[name]; !ok {
		b.order = append(b.order, name)
	}
	b.values[name] = value
}

// makeEnvironmentVariables is the container's environment, as the kubelet builds it:
// envFrom first (ConfigMaps and Secrets, with their prefix), then env, whose values may
// refer to the variables defined before them and to the service variables with $(VAR), or
// come from the downward API (fieldRef, resourceFieldRef) or a ConfigMap or Secret key;
// finally the service variables the container does not define itself.
func (m *Manager) makeEnvironmentVariables(ctx context.Context, pod *v1.Pod, c *v1.Container, podIPs []string) ([]envVar, error) {
	var serviceEnv map[string]string
	if m.cfg.ServiceEnv != nil {
		var err error
		if serviceEnv, err = m.cfg.ServiceEnv(ctx, pod); err != nil {
			return nil, err
		}
	}
	objs := &objectCache{getter: m.cfg.Objects, namespace: pod.Namespace, configMaps: map[string]*v1.ConfigMap{}, secrets: map[string]*v1.Secret{}}
	env := &envBuilder{values: map[string]string{}}

	for _, from := range c.EnvFrom {
		var data map[string]string
		switch {
		case from.ConfigMapRef != nil:
			cm, err := objs.configMap(ctx, from.ConfigMapRef.Name, from.ConfigMapRef.Optional)
			if err != nil {
				return nil, err
			}
			if cm != nil {
				data = cm.Data
			}
		case from.SecretRef != nil:
			s, err := objs.secret(ctx, from.SecretRef.Name, from.SecretRef.Optional)
			if err != nil {
				return nil, err
			}
			if s != nil {
				data = map[string]string{}
				for k, v := range s.Data {
					data[k] = string(v)
				}
			}
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			env.set(from.Prefix+k, data[k])
		}
	}

	podIP := ""
	if len(podIPs) > 0 {
		podIP = podIPs[0]
	}
	for _, e := range c.Env {
		value := e.Value
		switch from := e.ValueFrom; {
		case value != "":
			value = container.Expand(value, container.LookupIn(env.values, serviceEnv))
		case from == nil:
		case from.FieldRef != nil:
			v, err := m.podFieldValue(from.FieldRef.FieldPath, pod, podIP, podIPs)
			if err != nil {
				return nil, err
			}
			value = v
		case from.ResourceFieldRef != nil:
			v, err := m.containerResourceValue(from.ResourceFieldRef, pod, c)
			if err != nil {
				return nil, err
			}
			value = v
		case from.ConfigMapKeyRef != nil:
			ref := from.ConfigMapKeyRef
			cm, err := objs.configMap(ctx, ref.Name, ref.Optional)
			if err != nil {
				return nil, err
			}
			if cm == nil {
				continue // optional and absent
			}
			v, ok := cm.Data[ref.Key]
			if !ok {
				if isOptional(ref.Optional) {
					continue
				}
				return nil, fmt.Errorf("couldn't find key %v in ConfigMap %v/%v", ref.Key, pod.Namespace, ref.Name)
			}
			value = v
		case from.SecretKeyRef != nil:
			ref := from.SecretKeyRef
			s, err := objs.secret(ctx, ref.Name, ref.Optional)
			if err != nil {
				return nil, err
			}
			if s == nil {
				continue
			}
			v, ok := s.Data[ref.Key]
			if !ok {
				if isOptional(ref.Optional) {
					continue
				}
				return nil, fmt.Errorf("couldn't find key %v in Secret %v/%v", ref.Key, pod.Namespace, ref.Name)
			}
			value = string(v)
		default:
			return nil, fmt.Errorf("environment variable %q: this valueFrom is not supported by berth's node agent", e.Name)
		}
		env.set(e.Name, value)
	}

	out := make([]envVar, 0, len(env.order)+len(serviceEnv))
	for _, name := range env.order {
		out = append(out, envVar{name, env.values[name]})
	}
	names := make([]string, 0, len(serviceEnv))
	for name := range serviceEnv {
		if _, defined := env.values[name]; !defined {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		out = append(out, envVar{name, serviceEnv[name]})
	}
	return out, nil
}

func isOptional(b *bool) bool { return b != nil && *b }

// objectCache reads each ConfigMap and Secret of one container's environment once.
type objectCache struct {
	getter     ObjectGetter
	namespace  string
	configMaps map[string]*v1.ConfigMap
	secrets    map[string]*v1.Secret
}

// configMap returns the named ConfigMap; nil (and no error) when it is optional and absent.
func (o *objectCache) configMap(ctx context.Context, name string, optional *bool) (*v1.ConfigMap, error) {
	if cm, ok := o.configMaps[name]; ok {
		return cm, nil
	}
	if o.getter == nil {
		return nil, fmt.Errorf("couldn't get configMap %v/%v, no kubeClient defined", o.namespace, name)
	}
	cm, err := o.getter.GetConfigMap(ctx, o.namespace, name)
	if err != nil {
		if apierrors.IsNotFound(err) && isOptional(optional) {
			return nil, nil
		}
		return nil, err
	}
	o.configMaps[name] = cm
	return cm, nil
}

// secret returns the named Secret; nil (and no error) when it is optional and absent.
func (o *objectCache) secret(ctx context.Context, name string, optional *bool) (*v1.Secret, error) {
	if s, ok := o.secrets[name]; ok {
		return s, nil
	}
	if o.getter == nil {
		return nil, fmt.Errorf("couldn't get secret %v/%v, no kubeClient defined", o.namespace, name)
	}
	s, err := o.getter.GetSecret(ctx, o.namespace, name)
	if err != nil {
		if apierrors.IsNotFound(err) && isOptional(optional) {
			return nil, nil
		}
		return nil, err
	}
	o.secrets[name] = s
	return s, nil
}

// podFieldValue is the downward API's value of a pod field.
func (m *Manager) podFieldValue(fieldPath string, pod *v1.Pod, podIP string, podIPs []string) (string, error) {
	if v, ok := container.PodMetadataField(pod, fieldPath); ok {
		return v, nil
	}
	switch fieldPath {
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP":
		return podIP, nil
	case "status.podIPs":
		return strings.Join(podIPs, ","), nil
	case "status.hostIP", "status.hostIPs":
		if len(m.cfg.NodeIPs) == 0 {
			return "", errors.New("the node's IP is not known")
		}
		if fieldPath == "status.hostIP" {
			return m.cfg.NodeIPs[0].String(), nil
		}
		ips := make([]string, len(m.cfg.NodeIPs))
		for i, ip := range m.cfg.NodeIPs {
			ips[i] = ip.String()
		}
		return strings.Join(ips, ","), nil
	}
	return "", fmt.Errorf("unsupported fieldPath: %v", fieldPath)
}

// containerResourceValue is the downward API's value of a container's request or limit (of
// the named container when the selector names one).
func (m *Manager) containerResourceValue(ref *v1.ResourceFieldSelector, pod *v1.Pod, c *v1.Container) (string, error) {
	if ref.ContainerName != "" {
		if c = containerSpec(pod, ref.ContainerName); c == nil {
			return "", fmt.Errorf("container %s not found", ref.ContainerName)
		}
	}
	return container.ResourceFieldValue(ref, c, m.allocatable)
}

// containerSpec finds a container of the pod by name: app, init or ephemeral.
func containerSpec(pod *v1.Pod, name string) *v1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			return (*v1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		}
	}
	return nil
}
