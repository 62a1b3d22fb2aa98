package pod

import (
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/apis/core/resourcename"
)

// SetDefaults applies the defaults Kubernetes' v1 defaulters apply to a Pod
// (SetDefaults_Pod, SetDefaults_PodSpec and every nested defaulter the
// generated SetObjectDefaults_Pod calls), so `kubectl get pod -o yaml` shows
// the same object as on a real cluster. It only fills in unset fields, so
// running it again on a defaulted pod changes nothing.
//
// Admission-time mutations (service account, default tolerations, priority)
// and the strategy's create-time fields (status.phase, qosClass, pod-level
// resources, see DefaultPodLevelResources) are not defaults and live elsewhere.
func SetDefaults(pod *corev1.Pod) {
	spec := &pod.Spec

	// Pod-only defaults come first, as upstream: PodTemplates do not get them.
	if spec.TerminationGracePeriodSeconds != nil && *spec.TerminationGracePeriodSeconds < 0 {
		spec.TerminationGracePeriodSeconds = ptr.To[int64](1)
	}
	for i := range spec.Containers {
		requestsFromLimits(&spec.Containers[i].Resources)
	}
	for i := range spec.InitContainers {
		requestsFromLimits(&spec.InitContainers[i].Resources)
	}
	if spec.EnableServiceLinks == nil {
		spec.EnableServiceLinks = ptr.To(corev1.DefaultEnableServiceLinks)
	}
	if spec.HostNetwork {
		hostPortsFromContainerPorts(spec.Containers)
		hostPortsFromContainerPorts(spec.InitContainers)
	}

	defaultPodSpec(spec)
	for i := range spec.Volumes {
		defaultVolume(&spec.Volumes[i])
	}
	for i := range spec.InitContainers {
		defaultContainer(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		defaultContainer(&spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		defaultContainer((*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	roundUpToMilli(spec.Overhead)
	if spec.Resources != nil {
		roundUpToMilli(spec.Resources.Limits)
		roundUpToMilli(spec.Resources.Requests)
	}
	defaultPodStatus(&pod.Status)
}

// defaultPodSpec is SetDefaults_PodSpec: the defaults every PodSpec gets,
// including those embedded in workload templates.
func defaultPodSpec(spec *corev1.PodSpec) {
	// serviceAccount is the deprecated alias of serviceAccountName; the two are
	// kept equal, serviceAccountName winning when both are set.
	if spec.ServiceAccountName == "" {
		spec.ServiceAccountName = spec.DeprecatedServiceAccount //nolint:staticcheck // kept in sync on purpose
	}
	spec.DeprecatedServiceAccount = spec.ServiceAccountName //nolint:staticcheck // kept in sync on purpose
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = corev1.DNSClusterFirst
	}
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	if spec.TerminationGracePeriodSeconds == nil {
		spec.TerminationGracePeriodSeconds = ptr.To[int64](corev1.DefaultTerminationGracePeriodSeconds)
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = corev1.DefaultSchedulerName
	}
}

// requestsFromLimits copies each limit without a request into requests: a
// container that only sets limits asks for exactly its limits.
func requestsFromLimits(r *corev1.ResourceRequirements) {
	if r.Limits == nil {
		return
	}
	if r.Requests == nil {
		r.Requests = corev1.ResourceList{}
	}
	for name, limit := range r.Limits {
		if _, ok := r.Requests[name]; !ok {
			r.Requests[name] = limit.DeepCopy()
		}
	}
}

// hostPortsFromContainerPorts sets hostPort = containerPort: with host
// networking the container listens on the node's port anyway.
func hostPortsFromContainerPorts(containers []corev1.Container) {
	for i := range containers {
		for j := range containers[i].Ports {
			if p := &containers[i].Ports[j]; p.HostPort == 0 {
				p.HostPort = p.ContainerPort
			}
		}
	}
}

// roundUpToMilli rounds quantities up to milli precision, the finest the API
// keeps (upstream's SetDefaults_ResourceList).
func roundUpToMilli(list corev1.ResourceList) {
	for name, q := range list {
		q.RoundUp(-3)
		list[name] = q
	}
}

func defaultContainer(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = pullPolicyFor(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	for i := range c.Env {
		from := c.Env[i].ValueFrom
		if from == nil {
			continue
		}
		if from.FieldRef != nil && from.FieldRef.APIVersion == "" {
			from.FieldRef.APIVersion = "v1"
		}
		if from.FileKeyRef != nil && from.FileKeyRef.Optional == nil {
			from.FileKeyRef.Optional = ptr.To(false)
		}
	}
	roundUpToMilli(c.Resources.Limits)
	roundUpToMilli(c.Resources.Requests)
	defaultProbe(c.LivenessProbe)
	defaultProbe(c.ReadinessProbe)
	defaultProbe(c.StartupProbe)
	if c.Lifecycle != nil {
		if c.Lifecycle.PostStart != nil {
			defaultHTTPGet(c.Lifecycle.PostStart.HTTPGet)
		}
		if c.Lifecycle.PreStop != nil {
			defaultHTTPGet(c.Lifecycle.PreStop.HTTPGet)
		}
	}
}

func defaultProbe(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	defaultHTTPGet(p.HTTPGet)
	if p.GRPC != nil && p.GRPC.Service == nil {
		p.GRPC.Service = ptr.To("")
	}
}

func defaultHTTPGet(h *corev1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = corev1.URISchemeHTTP
	}
}

func defaultVolume(v *corev1.Volume) {
	// A volume that names no source is a scratch directory.
	if ptr.AllPtrFieldsNil(&v.VolumeSource) {
		v.VolumeSource = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	}
	src := &v.VolumeSource
	if src.Image != nil && src.Image.PullPolicy == "" {
		src.Image.PullPolicy = pullPolicyFor(src.Image.Reference)
	}
	if src.HostPath != nil && src.HostPath.Type == nil {
		src.HostPath.Type = ptr.To(corev1.HostPathUnset)
	}
	if src.Secret != nil && src.Secret.DefaultMode == nil {
		src.Secret.DefaultMode = ptr.To(corev1.SecretVolumeSourceDefaultMode)
	}
	if src.ConfigMap != nil && src.ConfigMap.DefaultMode == nil {
		src.ConfigMap.DefaultMode = ptr.To(corev1.ConfigMapVolumeSourceDefaultMode)
	}
	if src.DownwardAPI != nil {
		if src.DownwardAPI.DefaultMode == nil {
			src.DownwardAPI.DefaultMode = ptr.To(corev1.DownwardAPIVolumeSourceDefaultMode)
		}
		defaultDownwardAPIFiles(src.DownwardAPI.Items)
	}
	if src.Projected != nil {
		if src.Projected.DefaultMode == nil {
			src.Projected.DefaultMode = ptr.To(corev1.ProjectedVolumeSourceDefaultMode)
		}
		for i := range src.Projected.Sources {
			s := &src.Projected.Sources[i]
			if s.DownwardAPI != nil {
				defaultDownwardAPIFiles(s.DownwardAPI.Items)
			}
			if s.ServiceAccountToken != nil && s.ServiceAccountToken.ExpirationSeconds == nil {
				s.ServiceAccountToken.ExpirationSeconds = ptr.To[int64](3600)
			}
		}
	}
	if src.Ephemeral != nil && src.Ephemeral.VolumeClaimTemplate != nil {
		claim := &src.Ephemeral.VolumeClaimTemplate.Spec
		if claim.VolumeMode == nil {
			claim.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
		}
		roundUpToMilli(claim.Resources.Limits)
		roundUpToMilli(claim.Resources.Requests)
	}
	defaultLegacyVolume(src)
}

// defaultLegacyVolume fills in the defaults of the old in-tree volume
// plugins; they are rarely used but still visible in `kubectl get -o yaml`.
func defaultLegacyVolume(src *corev1.VolumeSource) {
	if src.ISCSI != nil && src.ISCSI.ISCSIInterface == "" {
		src.ISCSI.ISCSIInterface = "default"
	}
	if rbd := src.RBD; rbd != nil {
		if rbd.RBDPool == "" {
			rbd.RBDPool = "rbd"
		}
		if rbd.RadosUser == "" {
			rbd.RadosUser = "admin"
		}
		if rbd.Keyring == "" {
			rbd.Keyring = "/etc/ceph/keyring"
		}
	}
	if disk := src.AzureDisk; disk != nil {
		if disk.CachingMode == nil {
			disk.CachingMode = ptr.To(corev1.AzureDataDiskCachingReadWrite)
		}
		if disk.FSType == nil {
			disk.FSType = ptr.To("ext4")
		}
		if disk.ReadOnly == nil {
			disk.ReadOnly = ptr.To(false)
		}
		if disk.Kind == nil {
			disk.Kind = ptr.To(corev1.AzureSharedBlobDisk)
		}
	}
	if sio := src.ScaleIO; sio != nil {
		if sio.StorageMode == "" {
			sio.StorageMode = "ThinProvisioned"
		}
		if sio.FSType == "" {
			sio.FSType = "xfs"
		}
	}
}

func defaultDownwardAPIFiles(files []corev1.DownwardAPIVolumeFile) {
	for i := range files {
		if ref := files[i].FieldRef; ref != nil && ref.APIVersion == "" {
			ref.APIVersion = "v1"
		}
	}
}

// defaultPodStatus keeps status.podIP and status.podIPs in step (podIP wins
// on a mismatch, for old kubelets) and rounds the reported resources.
func defaultPodStatus(s *corev1.PodStatus) {
	hasIP, hasIPs := s.PodIP != "", len(s.PodIPs) > 0
	switch {
	case hasIP && !hasIPs:
		s.PodIPs = []corev1.PodIP{{IP: s.PodIP}}
	case !hasIP && hasIPs:
		s.PodIP = s.PodIPs[0].IP
	case hasIP && hasIPs && s.PodIPs[0].IP != s.PodIP:
		s.PodIPs = []corev1.PodIP{{IP: s.PodIP}}
	}
	for _, statuses := range [][]corev1.ContainerStatus{s.InitContainerStatuses, s.ContainerStatuses, s.EphemeralContainerStatuses} {
		for i := range statuses {
			roundUpToMilli(statuses[i].AllocatedResources)
			if r := statuses[i].Resources; r != nil {
				roundUpToMilli(r.Limits)
				roundUpToMilli(r.Requests)
			}
		}
	}
	roundUpToMilli(s.AllocatedResources)
	if s.Resources != nil {
		roundUpToMilli(s.Resources.Limits)
		roundUpToMilli(s.Resources.Requests)
	}
}

// DefaultPodLevelResources completes partly set pod-level resources
// (spec.resources) from the containers' resources. Kubernetes v1.37
// (PodLevelResourcesFixDefaulting) runs this in the pod strategy's
// PrepareForCreate, after admission has added every container, and on resize;
// it is not part of SetDefaults. In order:
//  1. hugepage limits default to the containers' aggregated hugepage limits
//     (unless a pod-level hugepage request is set);
//  2. requests default to the containers' aggregated requests (overcommittable
//     resources), then to the pod-level limits;
//  3. limits default to max(pod request, aggregated container limits) when
//     every container has a limit for that resource.
func DefaultPodLevelResources(pod *corev1.Pod) {
	res := pod.Spec.Resources
	if res == nil || (len(res.Requests) == 0 && len(res.Limits) == 0) {
		return
	}
	// Ephemeral containers cannot set resources, so only these two lists count.
	containersOnly := &corev1.Pod{Spec: corev1.PodSpec{
		Containers:     pod.Spec.Containers,
		InitContainers: pod.Spec.InitContainers,
	}}
	opts := resourcehelper.PodResourcesOptions{}

	limits := res.Limits
	if limits == nil {
		limits = corev1.ResourceList{}
	}
	for name, q := range resourcehelper.AggregateContainerLimits(containersOnly, opts) {
		if !resourcehelper.IsSupportedPodLevelResource(name) || !resourcename.IsHugePages(name) {
			continue
		}
		if _, ok := res.Requests[name]; ok {
			continue
		}
		if _, ok := limits[name]; !ok {
			limits[name] = q
		}
	}
	if len(limits) > 0 {
		res.Limits = limits
	}

	requests := res.Requests
	if requests == nil {
		requests = corev1.ResourceList{}
	}
	for name, q := range resourcehelper.AggregateContainerRequests(containersOnly, opts) {
		if _, ok := requests[name]; !ok && resourcehelper.IsSupportedPodLevelResource(name) && isOvercommitAllowed(name) {
			requests[name] = q
		}
	}
	for name, q := range res.Limits {
		if _, ok := requests[name]; !ok && resourcehelper.IsSupportedPodLevelResource(name) {
			requests[name] = q.DeepCopy()
		}
	}
	if len(requests) > 0 {
		res.Requests = requests
	}

	candidates := map[corev1.ResourceName]bool{}
	for name := range res.Requests {
		if _, ok := res.Limits[name]; !ok && resourcehelper.IsSupportedPodLevelResource(name) {
			candidates[name] = true
		}
	}
	// A pod-level limit is only implied when every container is limited.
	forEachContainer(&pod.Spec, func(c *corev1.Container) {
		for name := range candidates {
			if _, ok := c.Resources.Limits[name]; !ok {
				delete(candidates, name)
			}
		}
	})
	if len(candidates) == 0 {
		return
	}
	aggregated := resourcehelper.AggregateContainerLimits(containersOnly, opts)
	for name := range candidates {
		limit, ok := aggregated[name]
		if !ok {
			continue
		}
		// Keep requests <= limits when the pod asks for more than its containers.
		if request := res.Requests[name]; request.Cmp(limit) > 0 {
			limit = request
		}
		if res.Limits == nil {
			res.Limits = corev1.ResourceList{}
		}
		res.Limits[name] = limit
	}
}

// forEachContainer visits init, regular and ephemeral containers, in that order.
func forEachContainer(spec *corev1.PodSpec, visit func(c *corev1.Container)) {
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

// pullPolicyFor is the default imagePullPolicy for an image: Always for the
// "latest" tag (explicit or implied by giving neither tag nor digest),
// IfNotPresent otherwise, including for references that do not parse.
func pullPolicyFor(image string) corev1.PullPolicy {
	if tag, ok := imageTag(image); ok && tag == "latest" {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// The grammar of image references (github.com/distribution/reference), which
// the upstream defaulter parses images with.
var (
	refPathComponent = `[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*`
	refDomainPart    = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
	refHost          = `(?:` + refDomainPart + `(?:\.` + refDomainPart + `)*|\[(?:[a-fA-F0-9:]+)\])`
	refName          = `(?:` + refHost + `(?::[0-9]+)?/)?` + refPathComponent + `(?:/` + refPathComponent + `)*`
	refTag           = `[\w][\w.-]{0,127}`
	refDigest        = `[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][[:xdigit:]]{32,}`
	referenceRegexp  = regexp.MustCompile(`^(` + refName + `)(?::(` + refTag + `))?(?:@(` + refDigest + `))?$`)
	imageIDRegexp    = regexp.MustCompile(`^[a-f0-9]{64}$`)
	digestHexRegexp  = regexp.MustCompile(`^[a-f0-9]+$`)
	digestHexLengths = map[string]int{"sha256": 64, "sha384": 96, "sha512": 128}
)

// imageTag returns the tag an image reference names, "latest" when it names
// neither tag nor digest, and ok=false when the reference does not parse.
func imageTag(image string) (tag string, ok bool) {
	if imageIDRegexp.MatchString(image) {
		return "", false // a bare image ID is not a name
	}
	// Normalise to docker.io/library/... like `docker pull` does; the
	// repository (before any ':') must then be lower case.
	domain, rest := "docker.io", image
	if i := strings.IndexByte(image, '/'); i >= 0 {
		first := image[:i]
		if strings.ContainsAny(first, ".:") || first == "localhost" || strings.ToLower(first) != first {
			domain, rest = first, image[i+1:]
		}
	}
	if domain == "index.docker.io" {
		domain = "docker.io"
	}
	if domain == "docker.io" && !strings.Contains(rest, "/") {
		rest = "library/" + rest
	}
	repo, _, _ := strings.Cut(rest, ":")
	if strings.ToLower(repo) != repo {
		return "", false
	}
	m := referenceRegexp.FindStringSubmatch(domain + "/" + rest)
	if m == nil || len(m[1]) > 255 {
		return "", false
	}
	tag, digest := m[2], m[3]
	if digest != "" {
		algorithm, hex, _ := strings.Cut(digest, ":")
		if n, known := digestHexLengths[algorithm]; !known || len(hex) != n || !digestHexRegexp.MatchString(hex) {
			return "", false
		}
	}
	if tag == "" && digest == "" {
		tag = "latest"
	}
	return tag, true
}

// isOvercommitAllowed reports whether requests may be lower than limits.
func isOvercommitAllowed(name corev1.ResourceName) bool {
	return resourcename.IsNative(name) && !resourcename.IsHugePages(name)
}
