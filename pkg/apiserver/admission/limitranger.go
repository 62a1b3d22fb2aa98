package admission

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"golang.org/x/sync/singleflight"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/admission"
	genericadmissioninitializer "k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/utils/lru"
)

// LimitRangerPluginName is the name Kubernetes gives this plugin.
const LimitRangerPluginName = "LimitRanger"

// limitRangerAnnotation records on a pod which defaults the plugin set.
const limitRangerAnnotation = "kubernetes.io/limit-ranger"

func registerLimitRanger(plugins *admission.Plugins) {
	plugins.Register(LimitRangerPluginName, func(io.Reader) (admission.Interface, error) {
		return newLimitRanger(), nil
	})
}

// limitRanger applies the LimitRanges of a pod's namespace, as kube-apiserver's plugin:
// containers without a request or limit get the Container limit's defaultRequest and
// default (Admit); then each container, and the pod as a whole, must lie within the min,
// max and maxLimitRequestRatio of the Container and Pod limits, and a PVC's storage request
// within the PersistentVolumeClaim limit (Validate). Pods are checked on create and on
// pods/resize.
//
// When the informer holds no LimitRange for the namespace it asks the API server itself, and
// keeps that answer for liveTTL, as kube-apiserver's plugin does: a pod created just after
// its namespace's LimitRange, before the informer saw it, gets the defaults all the same.
type limitRanger struct {
	*admission.Handler
	lister corelisters.LimitRangeLister
	client kubernetes.Interface
	live   *lru.Cache // namespace → liveLookup
	group  singleflight.Group
}

func newLimitRanger() *limitRanger {
	return &limitRanger{Handler: admission.NewHandler(admission.Create, admission.Update), live: lru.New(10000)}
}

// liveTTL is how long a live lookup's answer stands (kube-apiserver's 30 s).
const liveTTL = 30 * time.Second

type liveLookup struct {
	expiry time.Time
	items  []*corev1.LimitRange
}

var (
	_ admission.MutationInterface                                  = &limitRanger{}
	_ admission.ValidationInterface                                = &limitRanger{}
	_ genericadmissioninitializer.WantsExternalKubeInformerFactory = &limitRanger{}
	_ genericadmissioninitializer.WantsExternalKubeClientSet       = &limitRanger{}
)

func (l *limitRanger) SetExternalKubeClientSet(c kubernetes.Interface) { l.client = c }

func (l *limitRanger) SetExternalKubeInformerFactory(f informers.SharedInformerFactory) {
	informer := f.Core().V1().LimitRanges()
	l.lister = informer.Lister()
	l.SetReadyFunc(informer.Informer().HasSynced)
}

func (l *limitRanger) ValidateInitialization() error {
	if l.lister == nil {
		return errors.New("missing limitRange lister")
	}
	if l.client == nil {
		return errors.New("missing client")
	}
	return nil
}

// applies: pod creates and resizes, PVC creates and updates.
func (l *limitRanger) applies(a admission.Attributes) bool {
	gr := a.GetResource().GroupResource()
	if gr.Group != "" {
		return false
	}
	switch gr.Resource {
	case "pods":
		return (a.GetSubresource() == "" && a.GetOperation() == admission.Create) ||
			(a.GetSubresource() == "resize" && a.GetOperation() == admission.Update)
	case "persistentvolumeclaims":
		return a.GetSubresource() == ""
	}
	return false
}

func (l *limitRanger) ranges(ctx context.Context, a admission.Attributes) ([]*corev1.LimitRange, error) {
	if !l.WaitForReady() {
		return nil, admission.NewForbidden(a, errors.New("not yet ready to handle request"))
	}
	items, err := l.lister.LimitRanges(a.GetNamespace()).List(labels.Everything())
	if err != nil {
		return nil, admission.NewForbidden(a, fmt.Errorf("unable to %s %v at this time because there was an error enforcing limit ranges", a.GetOperation(), a.GetResource()))
	}
	if len(items) == 0 {
		if items, err = l.liveLookup(ctx, a); err != nil {
			return nil, err
		}
	}
	// The same order each time, so that a pod's annotation reads the same.
	sort.Slice(items, func(i, j int) bool { return items[i].Name < items[j].Name })
	return items, nil
}

// liveLookup lists the namespace's LimitRanges from the API server, at most once per liveTTL
// and once at a time per namespace.
func (l *limitRanger) liveLookup(ctx context.Context, a admission.Attributes) ([]*corev1.LimitRange, error) {
	ns := a.GetNamespace()
	if e, ok := l.live.Get(ns); ok && e.(liveLookup).expiry.After(time.Now()) {
		return e.(liveLookup).items, nil
	}
	e, err, _ := l.group.Do(ns, func() (any, error) {
		list, err := l.client.CoreV1().LimitRanges(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, admission.NewForbidden(a, err)
		}
		entry := liveLookup{expiry: time.Now().Add(liveTTL)}
		for i := range list.Items {
			entry.items = append(entry.items, &list.Items[i])
		}
		l.live.Add(ns, entry)
		return entry, nil
	})
	if err != nil {
		return nil, err
	}
	return e.(liveLookup).items, nil
}

// Admit sets the default requests and limits of a new pod's containers.
func (l *limitRanger) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if !l.applies(a) || a.GetResource().Resource != "pods" || a.GetSubresource() != "" {
		return nil
	}
	pod, ok := a.GetObject().(*corev1.Pod)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("expected *v1.Pod but got %T", a.GetObject()))
	}
	items, err := l.ranges(ctx, a)
	if err != nil {
		return err
	}
	for _, lr := range items {
		mergeDefaults(pod, lr)
	}
	return nil
}

// Validate checks the pod or PVC against every LimitRange of its namespace.
func (l *limitRanger) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if !l.applies(a) {
		return nil
	}
	items, err := l.ranges(ctx, a)
	if err != nil {
		return err
	}
	for _, lr := range items {
		var err error
		switch obj := a.GetObject().(type) {
		case *corev1.Pod:
			err = validatePodLimits(lr, obj)
		case *corev1.PersistentVolumeClaim:
			err = validatePVCLimits(lr, obj)
		}
		if err != nil {
			return admission.NewForbidden(a, err)
		}
	}
	return nil
}

// mergeDefaults fills in the requests and limits a container lacks from lr's Container
// limit, and notes which in the pod's kubernetes.io/limit-ranger annotation.
func mergeDefaults(pod *corev1.Pod, lr *corev1.LimitRange) {
	requests, limits := corev1.ResourceList{}, corev1.ResourceList{}
	for _, limit := range lr.Spec.Limits {
		if limit.Type != corev1.LimitTypeContainer {
			continue
		}
		for k, v := range limit.DefaultRequest {
			requests[k] = v.DeepCopy()
		}
		for k, v := range limit.Default {
			limits[k] = v.DeepCopy()
		}
	}
	var notes []string
	merge := func(c *corev1.Container, kind string) {
		if c.Resources.Limits == nil {
			c.Resources.Limits = corev1.ResourceList{}
		}
		if c.Resources.Requests == nil {
			c.Resources.Requests = corev1.ResourceList{}
		}
		var setLimits, setRequests []string
		for k, v := range limits {
			if _, ok := c.Resources.Limits[k]; !ok {
				c.Resources.Limits[k] = v.DeepCopy()
				setLimits = append(setLimits, string(k))
			}
		}
		for k, v := range requests {
			if _, ok := c.Resources.Requests[k]; !ok {
				c.Resources.Requests[k] = v.DeepCopy()
				setRequests = append(setRequests, string(k))
			}
		}
		if len(setRequests) > 0 {
			sort.Strings(setRequests)
			notes = append(notes, strings.Join(setRequests, ", ")+fmt.Sprintf(" request for %s %s", kind, c.Name))
		}
		if len(setLimits) > 0 {
			sort.Strings(setLimits)
			notes = append(notes, strings.Join(setLimits, ", ")+fmt.Sprintf(" limit for %s %s", kind, c.Name))
		}
	}
	for i := range pod.Spec.Containers {
		merge(&pod.Spec.Containers[i], "container")
	}
	for i := range pod.Spec.InitContainers {
		merge(&pod.Spec.InitContainers[i], "init container")
	}
	if len(notes) > 0 {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[limitRangerAnnotation] = "LimitRanger plugin set: " + strings.Join(notes, "; ")
	}
}

func validatePodLimits(lr *corev1.LimitRange, pod *corev1.Pod) error {
	var errs []error
	check := func(limit corev1.LimitRangeItem, requests, limits corev1.ResourceList) {
		t := string(limit.Type)
		for k, v := range limit.Min {
			errs = appendErr(errs, minConstraint(t, string(k), v, requests, limits))
		}
		for k, v := range limit.Max {
			errs = appendErr(errs, maxConstraint(t, string(k), v, requests, limits))
		}
		for k, v := range limit.MaxLimitRequestRatio {
			errs = appendErr(errs, ratioConstraint(t, string(k), v, requests, limits))
		}
	}
	for _, limit := range lr.Spec.Limits {
		switch limit.Type {
		case corev1.LimitTypeContainer:
			for _, c := range pod.Spec.Containers {
				check(limit, c.Resources.Requests, c.Resources.Limits)
			}
			for _, c := range pod.Spec.InitContainers {
				check(limit, c.Resources.Requests, c.Resources.Limits)
			}
		case corev1.LimitTypePod:
			check(limit, podTotals(pod, func(r corev1.ResourceRequirements) corev1.ResourceList { return r.Requests }, true),
				podTotals(pod, func(r corev1.ResourceRequirements) corev1.ResourceList { return r.Limits }, false))
		}
	}
	return utilerrors.NewAggregate(errs)
}

func validatePVCLimits(lr *corev1.LimitRange, pvc *corev1.PersistentVolumeClaim) error {
	var errs []error
	for _, limit := range lr.Spec.Limits {
		if limit.Type != corev1.LimitTypePersistentVolumeClaim {
			continue
		}
		t := string(limit.Type)
		for k, v := range limit.Min {
			errs = appendErr(errs, minConstraint(t, string(k), v, pvc.Spec.Resources.Requests, corev1.ResourceList{}))
		}
		for k, v := range limit.Max {
			errs = appendErr(errs, maxRequestConstraint(t, string(k), v, pvc.Spec.Resources.Requests))
		}
	}
	return utilerrors.NewAggregate(errs)
}

func appendErr(errs []error, err error) []error {
	if err != nil {
		return append(errs, err)
	}
	return errs
}

// podTotals is the pod's effective requests (or limits): its containers' sum, sidecars
// included, or the largest init container's if more (a running sidecar adds to those after
// it); the pod-level resources win where set, for requests and limits alike.
func podTotals(pod *corev1.Pod, of func(corev1.ResourceRequirements) corev1.ResourceList, requests bool) corev1.ResourceList {
	total := corev1.ResourceList{}
	for _, c := range pod.Spec.Containers {
		addList(total, of(c.Resources))
	}
	sidecars, initMax := corev1.ResourceList{}, corev1.ResourceList{}
	for _, c := range pod.Spec.InitContainers {
		own := of(c.Resources)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			addList(total, own)
			addList(sidecars, own)
			own = sidecars
		} else {
			tmp := corev1.ResourceList{}
			addList(tmp, own)
			addList(tmp, sidecars)
			own = tmp
		}
		maxList(initMax, own)
	}
	maxList(total, initMax)
	if pod.Spec.Resources != nil {
		level := pod.Spec.Resources.Limits
		if requests {
			level = pod.Spec.Resources.Requests
		}
		for k, q := range level {
			if k == corev1.ResourceCPU || k == corev1.ResourceMemory {
				total[k] = q
			}
		}
	}
	return total
}

func addList(into, add corev1.ResourceList) {
	for k, q := range add {
		cur := into[k]
		cur.Add(q)
		into[k] = cur
	}
}

func maxList(into, other corev1.ResourceList) {
	for k, q := range other {
		if cur, ok := into[k]; !ok || q.Cmp(cur) > 0 {
			into[k] = q.DeepCopy()
		}
	}
}

// values compares in milli-units unless a value is too large for them (upstream's way).
func values(req, lim, enforced resource.Quantity) (int64, int64, int64) {
	r, l, e := req.Value(), lim.Value(), enforced.Value()
	if r <= resource.MaxMilliValue && l <= resource.MaxMilliValue && e <= resource.MaxMilliValue {
		return req.MilliValue(), lim.MilliValue(), enforced.MilliValue()
	}
	return r, l, e
}

func minConstraint(t, name string, enforced resource.Quantity, requests, limits corev1.ResourceList) error {
	req, hasReq := requests[corev1.ResourceName(name)]
	lim, hasLim := limits[corev1.ResourceName(name)]
	r, l, e := values(req, lim, enforced)
	switch {
	case !hasReq:
		return fmt.Errorf("minimum %s usage per %s is %s.  No request is specified", name, t, enforced.String())
	case r < e:
		return fmt.Errorf("minimum %s usage per %s is %s, but request is %s", name, t, enforced.String(), req.String())
	case hasLim && l < e:
		return fmt.Errorf("minimum %s usage per %s is %s, but limit is %s", name, t, enforced.String(), lim.String())
	}
	return nil
}

func maxRequestConstraint(t, name string, enforced resource.Quantity, requests corev1.ResourceList) error {
	req, hasReq := requests[corev1.ResourceName(name)]
	r, _, e := values(req, resource.Quantity{}, enforced)
	switch {
	case !hasReq:
		return fmt.Errorf("maximum %s usage per %s is %s.  No request is specified", name, t, enforced.String())
	case r > e:
		return fmt.Errorf("maximum %s usage per %s is %s, but request is %s", name, t, enforced.String(), req.String())
	}
	return nil
}

func maxConstraint(t, name string, enforced resource.Quantity, requests, limits corev1.ResourceList) error {
	req, hasReq := requests[corev1.ResourceName(name)]
	lim, hasLim := limits[corev1.ResourceName(name)]
	r, l, e := values(req, lim, enforced)
	switch {
	case !hasLim:
		return fmt.Errorf("maximum %s usage per %s is %s.  No limit is specified", name, t, enforced.String())
	case l > e:
		return fmt.Errorf("maximum %s usage per %s is %s, but limit is %s", name, t, enforced.String(), lim.String())
	case hasReq && r > e:
		return fmt.Errorf("maximum %s usage per %s is %s, but request is %s", name, t, enforced.String(), req.String())
	}
	return nil
}

func ratioConstraint(t, name string, enforced resource.Quantity, requests, limits corev1.ResourceList) error {
	req, hasReq := requests[corev1.ResourceName(name)]
	lim, hasLim := limits[corev1.ResourceName(name)]
	r, l, _ := values(req, lim, enforced)
	if !hasReq || r == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no request is specified or request is 0", name, t, enforced.String())
	}
	if !hasLim || l == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no limit is specified or limit is 0", name, t, enforced.String())
	}
	observed := float64(l) / float64(r)
	shown, bound := observed, float64(enforced.Value())
	if enforced.Value() <= resource.MaxMilliValue {
		observed, bound = observed*1000, float64(enforced.MilliValue())
	}
	if observed > bound {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but provided ratio is %f", name, t, enforced.String(), shown)
	}
	return nil
}
