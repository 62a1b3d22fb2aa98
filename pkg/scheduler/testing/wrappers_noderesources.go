package testing

import (
	"strconv"

	v1 "k8s.io/api/core/v1"
)

// ContainerReq adds a container with these requests (Req sets the first container's).
func (p *PodWrapper) ContainerReq(reqs map[v1.ResourceName]string) *PodWrapper {
	p.Spec.Containers = append(p.Spec.Containers, v1.Container{
		Name: "c" + strconv.Itoa(len(p.Spec.Containers)), Image: "img",
		Resources: v1.ResourceRequirements{Requests: ResourceList(reqs)},
	})
	return p
}

// SidecarReq adds a sidecar (an init container with restartPolicy Always) with these
// requests; it runs beside the app containers, so its requests add to theirs.
func (p *PodWrapper) SidecarReq(reqs map[v1.ResourceName]string) *PodWrapper {
	always := v1.ContainerRestartPolicyAlways
	p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{
		Name: "sidecar" + strconv.Itoa(len(p.Spec.InitContainers)), Image: "img", RestartPolicy: &always,
		Resources: v1.ResourceRequirements{Requests: ResourceList(reqs)},
	})
	return p
}

// PodLevelReq sets pod-level requests (spec.resources.requests).
func (p *PodWrapper) PodLevelReq(reqs map[v1.ResourceName]string) *PodWrapper {
	p.Spec.Resources = &v1.ResourceRequirements{Requests: ResourceList(reqs)}
	return p
}
