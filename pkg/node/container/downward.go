package container

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The downward API's values, shared by env (fieldRef, resourceFieldRef) and downwardAPI
// volumes.

// PodMetadataField is the value of a metadata field path: metadata.name, namespace, uid,
// labels, annotations, and one label or annotation as metadata.labels['key']. ok is false for
// any other path.
func PodMetadataField(pod *v1.Pod, path string) (string, bool) {
	switch path {
	case "metadata.name":
		return pod.Name, true
	case "metadata.namespace":
		return pod.Namespace, true
	case "metadata.uid":
		return string(pod.UID), true
	case "metadata.labels":
		return FormatMap(pod.Labels), true
	case "metadata.annotations":
		return FormatMap(pod.Annotations), true
	}
	for prefix, values := range map[string]map[string]string{"metadata.labels": pod.Labels, "metadata.annotations": pod.Annotations} {
		if rest, ok := strings.CutPrefix(path, prefix+"['"); ok {
			if key, ok := strings.CutSuffix(rest, "']"); ok {
				return values[key], true
			}
		}
	}
	return "", false
}

// FormatMap renders a map as the downward API does: sorted key="value" lines.
func FormatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%q\n", k, m[k])
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// ResourceFieldValue is a container's request or limit divided by the selector's divisor,
// rounded up. A limit the container does not set is the node's allocatable amount.
func ResourceFieldValue(ref *v1.ResourceFieldSelector, c *v1.Container, allocatable v1.ResourceList) (string, error) {
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", fmt.Errorf("unsupported container resource : %v", ref.Resource)
	}
	rn := v1.ResourceName(name)
	if rn != v1.ResourceCPU && rn != v1.ResourceMemory && rn != v1.ResourceEphemeralStorage && !strings.HasPrefix(name, v1.ResourceHugePagesPrefix) {
		return "", fmt.Errorf("unsupported container resource : %v", ref.Resource)
	}
	list := c.Resources.Requests
	if kind == "limits" {
		list = c.Resources.Limits
	}
	q, set := list[rn]
	if !set && kind == "limits" {
		q = allocatable[rn]
	}
	var v float64
	if rn == v1.ResourceCPU {
		v = math.Ceil(float64(q.MilliValue()) / float64(divisor.MilliValue()))
	} else {
		v = math.Ceil(float64(q.Value()) / float64(divisor.Value()))
	}
	return strconv.FormatInt(int64(v), 10), nil
}
