package pod

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func containersWithPorts(ports ...[]corev1.ContainerPort) *corev1.PodTemplateSpec {
	t := &corev1.PodTemplateSpec{}
	for i, p := range ports {
		t.Spec.Containers = append(t.Spec.Containers, corev1.Container{Name: string(rune('a' + i)), Ports: p})
	}
	return t
}

func port(containerPort, hostPort int32, protocol corev1.Protocol, hostIP string) corev1.ContainerPort {
	return corev1.ContainerPort{ContainerPort: containerPort, HostPort: hostPort, Protocol: protocol, HostIP: hostIP}
}

func namedPort(name string, containerPort int32, protocol corev1.Protocol) corev1.ContainerPort {
	return corev1.ContainerPort{Name: name, ContainerPort: containerPort, Protocol: protocol}
}

func TestPortWarnings(t *testing.T) {
	const tcp, udp = corev1.ProtocolTCP, corev1.ProtocolUDP
	always := ptr.To(corev1.ContainerRestartPolicyAlways)
	sidecars := func(t *corev1.PodTemplateSpec, n int) *corev1.PodTemplateSpec {
		// The first n containers become sidecars (restartable init containers).
		for i := range t.Spec.Containers[:n] {
			t.Spec.Containers[i].RestartPolicy = always
		}
		t.Spec.InitContainers = t.Spec.Containers[:n]
		t.Spec.Containers = t.Spec.Containers[n:]
		return t
	}
	runWarningCases(t, []warningCase{
		{name: "container no ports", template: containersWithPorts([]corev1.ContainerPort{})},
		{name: "one container, one port", template: containersWithPorts([]corev1.ContainerPort{port(80, 80, "", "")})},
		{name: "one container, two ports, same protocol, different ports", template: containersWithPorts([]corev1.ContainerPort{port(80, 0, udp, ""), port(81, 0, udp, "")})},
		{name: "one container, two ports, different protocols, same port", template: containersWithPorts([]corev1.ContainerPort{port(80, 0, udp, ""), port(80, 0, tcp, "")})},
		{name: "one container, two ports, same protocol, same port, different hostport", template: containersWithPorts([]corev1.ContainerPort{port(80, 80, tcp, ""), port(80, 81, tcp, "")})},
		{name: "one container, two ports, same protocol, port and hostPort, different hostIP", template: containersWithPorts([]corev1.ContainerPort{port(80, 80, tcp, "10.0.0.1"), port(80, 80, tcp, "10.0.0.2")})},
		{name: "two containers, one port each, same protocol, different ports", template: containersWithPorts([]corev1.ContainerPort{port(80, 0, udp, "")}, []corev1.ContainerPort{port(81, 0, udp, "")})},
		{name: "two containers, one port each, different protocols, same port", template: containersWithPorts([]corev1.ContainerPort{port(80, 0, udp, "")}, []corev1.ContainerPort{port(80, 0, tcp, "")})},
		{name: "two containers, one port each, same protocol, same port, different hostport", template: containersWithPorts([]corev1.ContainerPort{port(80, 80, tcp, "")}, []corev1.ContainerPort{port(80, 81, tcp, "")})},
		{name: "two containers, one port each, same protocol, port and hostPort, different hostIP", template: containersWithPorts([]corev1.ContainerPort{port(80, 80, tcp, "10.0.0.1")}, []corev1.ContainerPort{port(80, 80, tcp, "10.0.0.2")})},
		{
			name:     "duplicate container ports with same port and protocol",
			template: containersWithPorts([]corev1.ContainerPort{port(80, 0, udp, ""), port(80, 0, udp, "")}),
			want:     []string{`spec.containers[0].ports[1]: duplicate port definition with spec.containers[0].ports[0]`},
		},
		{
			name:     "duplicate container ports with same port, hostPort and protocol",
			template: containersWithPorts([]corev1.ContainerPort{port(80, 80, udp, ""), port(80, 80, udp, "")}),
			want:     []string{`spec.containers[0].ports[1]: duplicate port definition with spec.containers[0].ports[0]`},
		},
		{
			name:     "duplicate container ports with same port, host port, host IP and protocol",
			template: containersWithPorts([]corev1.ContainerPort{port(80, 80, udp, "10.0.0.1"), port(80, 80, udp, "10.0.0.1")}),
			want:     []string{`spec.containers[0].ports[1]: duplicate port definition with spec.containers[0].ports[0]`},
		},
		{
			name:     "one container port hostIP set without host port set",
			template: containersWithPorts([]corev1.ContainerPort{port(80, 0, udp, "10.0.0.1")}),
			want:     []string{`spec.containers[0].ports[0]: hostIP set without hostPort: {Name: HostPort:0 ContainerPort:80 Protocol:UDP HostIP:10.0.0.1}`},
		},
		{
			name:     "duplicate container ports with one host port set and one without",
			template: containersWithPorts([]corev1.ContainerPort{port(80, 80, udp, "10.0.0.1"), port(80, 0, udp, "10.0.0.1")}),
			want: []string{
				`spec.containers[0].ports[1]: hostIP set without hostPort: {Name: HostPort:0 ContainerPort:80 Protocol:UDP HostIP:10.0.0.1}`,
				`spec.containers[0].ports[1]: overlapping port definition with spec.containers[0].ports[0]`,
			},
		},
		{
			name:     "duplicate container ports without one host IP set and two with",
			template: containersWithPorts([]corev1.ContainerPort{port(80, 80, udp, "10.0.0.1"), port(80, 80, udp, ""), port(80, 80, udp, "10.0.0.2")}),
			want: []string{
				`spec.containers[0].ports[1]: dangerously ambiguous port definition with spec.containers[0].ports[0]`,
				`spec.containers[0].ports[2]: dangerously ambiguous port definition with spec.containers[0].ports[1]`,
			},
		},
		{
			name:     "duplicate container ports with one host IP set and one without",
			template: containersWithPorts([]corev1.ContainerPort{port(80, 80, udp, "10.0.0.1"), port(80, 80, udp, "")}),
			want:     []string{`spec.containers[0].ports[1]: dangerously ambiguous port definition with spec.containers[0].ports[0]`},
		},
		{
			name:     "duplicate containers with same port and protocol",
			template: containersWithPorts([]corev1.ContainerPort{port(80, 0, udp, "")}, []corev1.ContainerPort{port(80, 0, udp, "")}),
			want:     []string{`spec.containers[1].ports[0]: duplicate port definition with spec.containers[0].ports[0]`},
		},
		{
			name:     "duplicate containers with same port, hostPort and protocol",
			template: containersWithPorts([]corev1.ContainerPort{port(80, 80, udp, "")}, []corev1.ContainerPort{port(80, 80, udp, "")}),
			want:     []string{`spec.containers[1].ports[0]: duplicate port definition with spec.containers[0].ports[0]`},
		},
		{
			name:     "duplicate containers with same port, host port, host IP and protocol",
			template: containersWithPorts([]corev1.ContainerPort{port(80, 80, udp, "10.0.0.1")}, []corev1.ContainerPort{port(80, 80, udp, "10.0.0.1")}),
			want:     []string{`spec.containers[1].ports[0]: duplicate port definition with spec.containers[0].ports[0]`},
		},
		{
			name:     "duplicate containers with one host port set and one without",
			template: containersWithPorts([]corev1.ContainerPort{port(80, 80, udp, "10.0.0.1")}, []corev1.ContainerPort{port(80, 0, udp, "10.0.0.1")}),
			want: []string{
				`spec.containers[1].ports[0]: hostIP set without hostPort: {Name: HostPort:0 ContainerPort:80 Protocol:UDP HostIP:10.0.0.1}`,
				`spec.containers[1].ports[0]: overlapping port definition with spec.containers[0].ports[0]`,
			},
		},
		{
			name:     "duplicate container ports without one host IP set and one with",
			template: containersWithPorts([]corev1.ContainerPort{port(80, 80, udp, "")}, []corev1.ContainerPort{port(80, 80, udp, "10.0.0.1")}),
			want:     []string{`spec.containers[1].ports[0]: dangerously ambiguous port definition with spec.containers[0].ports[0]`},
		},
		{
			name:     "duplicate container ports with one host IP set and one without",
			template: containersWithPorts([]corev1.ContainerPort{port(80, 80, udp, "10.0.0.1")}, []corev1.ContainerPort{port(80, 80, udp, "")}),
			want:     []string{`spec.containers[1].ports[0]: dangerously ambiguous port definition with spec.containers[0].ports[0]`},
		},
		{
			name: "create duplicate container ports in two containers",
			template: containersWithPorts(
				[]corev1.ContainerPort{port(80, 80, udp, ""), port(180, 80, udp, ""), port(80, 80, udp, "")},
				[]corev1.ContainerPort{port(80, 80, udp, ""), port(80, 80, udp, "")},
			),
			want: []string{
				`spec.containers[0].ports[2]: duplicate port definition with spec.containers[0].ports[0]`,
				`spec.containers[1].ports[0]: duplicate port definition with spec.containers[0].ports[0]`,
				`spec.containers[1].ports[0]: duplicate port definition with spec.containers[0].ports[2]`,
				`spec.containers[1].ports[1]: duplicate port definition with spec.containers[0].ports[0]`,
				`spec.containers[1].ports[1]: duplicate port definition with spec.containers[0].ports[2]`,
				`spec.containers[1].ports[1]: duplicate port definition with spec.containers[1].ports[0]`,
			},
		},
		{
			// Upstream's old template narrows nothing: the clashes the stored template had
			// already are warned of again.
			name: "update duplicate container ports in two containers",
			template: containersWithPorts(
				[]corev1.ContainerPort{port(80, 80, tcp, ""), port(180, 80, tcp, ""), port(80, 80, tcp, "")},
				[]corev1.ContainerPort{port(80, 80, tcp, ""), port(80, 80, tcp, "")},
			),
			old: containersWithPorts(
				[]corev1.ContainerPort{port(80, 180, tcp, ""), port(180, 80, tcp, ""), port(80, 80, tcp, "")},
				[]corev1.ContainerPort{port(80, 180, tcp, ""), port(80, 80, tcp, "")},
			),
			want: []string{
				`spec.containers[0].ports[2]: duplicate port definition with spec.containers[0].ports[0]`,
				`spec.containers[1].ports[0]: duplicate port definition with spec.containers[0].ports[0]`,
				`spec.containers[1].ports[0]: duplicate port definition with spec.containers[0].ports[2]`,
				`spec.containers[1].ports[1]: duplicate port definition with spec.containers[0].ports[0]`,
				`spec.containers[1].ports[1]: duplicate port definition with spec.containers[0].ports[2]`,
				`spec.containers[1].ports[1]: duplicate port definition with spec.containers[1].ports[0]`,
			},
		},
		{
			name:     "create duplicate container ports name in two containers",
			template: containersWithPorts([]corev1.ContainerPort{namedPort("test", 80, udp)}, []corev1.ContainerPort{namedPort("test", 8090, tcp)}),
			want:     []string{`spec.containers[1].ports[0]: duplicate port name "test" with spec.containers[0].ports[0], services and probes that select ports by name will use spec.containers[0].ports[0]`},
		},
		{
			name:     "update duplicate container ports name in two containers",
			template: containersWithPorts([]corev1.ContainerPort{namedPort("test", 80, udp)}, []corev1.ContainerPort{namedPort("test1", 8090, udp), namedPort("test", 8092, udp)}),
			old:      containersWithPorts([]corev1.ContainerPort{namedPort("test", 80, udp)}, []corev1.ContainerPort{namedPort("test1", 8090, udp)}),
			want:     []string{`spec.containers[1].ports[1]: duplicate port name "test" with spec.containers[0].ports[0], services and probes that select ports by name will use spec.containers[0].ports[0]`},
		},
		{
			name:     "create duplicate container ports name in two sidecar containers",
			template: sidecars(containersWithPorts([]corev1.ContainerPort{namedPort("test", 80, udp)}, []corev1.ContainerPort{namedPort("test", 8090, tcp)}), 2),
			want:     []string{`spec.initContainers[1].ports[0]: duplicate port name "test" with spec.initContainers[0].ports[0], services and probes that select ports by name will use spec.initContainers[0].ports[0]`},
		},
		{
			name:     "update duplicate container ports name in two sidecar containers",
			template: sidecars(containersWithPorts([]corev1.ContainerPort{namedPort("test", 80, udp)}, []corev1.ContainerPort{namedPort("test1", 8090, udp), namedPort("test", 8091, udp)}), 2),
			old:      sidecars(containersWithPorts([]corev1.ContainerPort{namedPort("test", 80, udp)}, []corev1.ContainerPort{namedPort("test1", 8090, udp)}), 2),
			want:     []string{`spec.initContainers[1].ports[1]: duplicate port name "test" with spec.initContainers[0].ports[0], services and probes that select ports by name will use spec.initContainers[0].ports[0]`},
		},
		{
			name:     "create duplicate container ports name in containers and sidecar containers",
			template: sidecars(containersWithPorts([]corev1.ContainerPort{namedPort("test", 80, udp)}, []corev1.ContainerPort{namedPort("test", 8090, tcp)}), 1),
			want:     []string{`spec.containers[0].ports[0]: duplicate port name "test" with spec.initContainers[0].ports[0], services and probes that select ports by name will use spec.initContainers[0].ports[0]`},
		},
		{
			name:     "update duplicate container ports name in containers and sidecar containers",
			template: sidecars(containersWithPorts([]corev1.ContainerPort{namedPort("test", 80, udp)}, []corev1.ContainerPort{namedPort("test1", 8090, udp), namedPort("test", 8092, udp)}), 1),
			old:      sidecars(containersWithPorts([]corev1.ContainerPort{namedPort("test", 80, udp)}, []corev1.ContainerPort{namedPort("test1", 8090, udp)}), 1),
			want:     []string{`spec.containers[0].ports[1]: duplicate port name "test" with spec.initContainers[0].ports[0], services and probes that select ports by name will use spec.initContainers[0].ports[0]`},
		},
		{
			name:     "a port name used three times names the first each time",
			template: containersWithPorts([]corev1.ContainerPort{namedPort("p", 1, tcp), namedPort("p", 2, tcp)}, []corev1.ContainerPort{namedPort("p", 3, tcp)}),
			want: []string{
				`spec.containers[0].ports[1]: duplicate port name "p" with spec.containers[0].ports[0], services and probes that select ports by name will use spec.containers[0].ports[0]`,
				`spec.containers[1].ports[0]: duplicate port name "p" with spec.containers[0].ports[0], services and probes that select ports by name will use spec.containers[0].ports[0]`,
			},
		},
	})
}
