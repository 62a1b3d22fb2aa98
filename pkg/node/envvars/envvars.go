// Package envvars is the part of the kubelet's makeEnvironmentVariables that tells a container
// where the cluster's Services are (pkg/kubelet/envvars and getServiceEnvVarMap): for every
// Service of the pod's namespace with a cluster IP, {SVC}_SERVICE_HOST, {SVC}_SERVICE_PORT
// (and _PORT_{NAME} per named port) and the Docker-link variables {SVC}_PORT and
// {SVC}_PORT_{port}_{PROTO}[_PROTO|_PORT|_ADDR]; and always those of the kubernetes Service of
// the default namespace, even with enableServiceLinks: false. The runtime manager
// (kuberuntime) adds them after the container's own variables, which win.
//
// ForServices is the pure part; Services is the node agent's one informer of Services that
// feeds it (services.go).
package envvars

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// masterService is the Service whose variables every pod gets (the kubelet's masterServices).
const masterService = "kubernetes"

// ForServices is the service environment of a pod in namespace, from the cluster's services:
// the default namespace's kubernetes Service always, and the namespace's own services when
// enableServiceLinks is set; a Service of the namespace wins over the default namespace's of
// the same name. Services without a cluster IP (headless, ClusterIP None) give nothing.
func ForServices(services []*v1.Service, namespace string, enableServiceLinks bool) map[string]string {
	byName := map[string]*v1.Service{}
	for _, s := range services {
		if !hasClusterIP(s) {
			continue
		}
		switch {
		case s.Namespace == namespace && enableServiceLinks:
			byName[s.Name] = s
		case s.Namespace == metav1.NamespaceDefault && s.Name == masterService:
			if _, ok := byName[s.Name]; !ok {
				byName[s.Name] = s
			}
		}
	}
	// By name, so that two services whose variables collide always resolve the same way.
	names := make([]string, 0, len(byName))
	for name := range byName {
		names = append(names, name)
	}
	slices.Sort(names)
	env := map[string]string{}
	for _, name := range names {
		for _, e := range serviceVariables(byName[name]) {
			env[e.Name] = e.Value
		}
	}
	return env
}

// hasClusterIP is the kubelet's IsServiceIPSet: a cluster IP that is neither "" nor None.
func hasClusterIP(s *v1.Service) bool {
	return s.Spec.ClusterIP != v1.ClusterIPNone && s.Spec.ClusterIP != ""
}

// serviceVariables are one Service's variables, in the kubelet's order.
func serviceVariables(s *v1.Service) []v1.EnvVar {
	if len(s.Spec.Ports) == 0 {
		return nil // the API never stores one; nothing to say of it
	}
	prefix := variableName(s.Name)
	ip := s.Spec.ClusterIP
	out := []v1.EnvVar{
		{Name: prefix + "_SERVICE_HOST", Value: ip},
		{Name: prefix + "_SERVICE_PORT", Value: strconv.Itoa(int(s.Spec.Ports[0].Port))},
	}
	// Only the first port may be unnamed (validation): each named one has a variable.
	for _, p := range s.Spec.Ports {
		if p.Name != "" {
			out = append(out, v1.EnvVar{Name: prefix + "_SERVICE_PORT_" + variableName(p.Name), Value: strconv.Itoa(int(p.Port))})
		}
	}
	// The Docker-link variables; the first port is also {SVC}_PORT.
	for i, p := range s.Spec.Ports {
		protocol := string(v1.ProtocolTCP)
		if p.Protocol != "" {
			protocol = string(p.Protocol)
		}
		port := strconv.Itoa(int(p.Port))
		url := strings.ToLower(protocol) + "://" + net.JoinHostPort(ip, port)
		if i == 0 {
			out = append(out, v1.EnvVar{Name: prefix + "_PORT", Value: url})
		}
		portPrefix := fmt.Sprintf("%s_PORT_%d_%s", prefix, p.Port, strings.ToUpper(protocol))
		out = append(out,
			v1.EnvVar{Name: portPrefix, Value: url},
			v1.EnvVar{Name: portPrefix + "_PROTO", Value: strings.ToLower(protocol)},
			v1.EnvVar{Name: portPrefix + "_PORT", Value: port},
			v1.EnvVar{Name: portPrefix + "_ADDR", Value: ip},
		)
	}
	return out
}

// variableName is a Service or port name as a variable name: upper case, '-' as '_'.
func variableName(name string) string {
	return strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}
