package envvars

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	kubetypes "github.com/berth-cluster/berth/pkg/node/types"
	"github.com/berth-cluster/berth/pkg/util/panics"
)

// defaultSyncWait bounds how long a container's start waits for the first list of Services.
// The kubelet fails the start at once (CreateContainerConfigError, retried after the pod
// worker's 10 s back-off); the first list normally lands within milliseconds of the node
// agent's start, so waiting a little spares a pod that raced it the back-off.
const defaultSyncWait = 5 * time.Second

// errNotSynced is the kubelet's error while no list of Services has been read.
var errNotSynced = errors.New("services have not yet been read at least once, cannot construct envvars")

// Services is the node agent's view of the cluster's Services (the kubelet's serviceLister):
// one informer of every Service, shared by every pod of the node (and, in berth sim, by every
// node). The node's credential must be allowed to list and watch services; Kubernetes'
// system:node role allows it, and so does berth's API server, which today lets only
// system:masters (the credential `berth up` gives its node) touch resources.
//
// An API server that serves no services resource (berth's, until it does) answers the list
// with 404: Services then counts as synced with none and says so once in the log; the
// reflector keeps retrying (silently, at its back-off of up to 30 s), so that services appear
// once the API server serves them.
type Services struct {
	informer cache.SharedIndexInformer
	lister   corelisters.ServiceLister
	// syncWait is how long EnvFor waits for the first list (defaultSyncWait).
	syncWait time.Duration
	// unserved: a list was refused with 404 (no services resource). It stays set, as the
	// informer's HasSynced does, so that an API server outage later holds no container back.
	unserved atomic.Bool
}

// NewServices makes the informer of client's Services; Run runs it.
func NewServices(client kubernetes.Interface) *Services {
	informer := coreinformers.NewServiceInformer(client, metav1.NamespaceAll, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	s := &Services{informer: informer, lister: corelisters.NewServiceLister(informer.GetIndexer()), syncWait: defaultSyncWait}
	_ = informer.SetWatchErrorHandlerWithContext(s.watchError)
	return s
}

// Run runs the informer until ctx ends. A panic inside it is recovered and counted
// (berth_recovered_panics_total{component="services"}) rather than ending the process; an
// informer cannot run twice, so the node's pods then keep the Services last listed.
func (s *Services) Run(ctx context.Context) {
	_ = panics.Call(ctx, "services", func() error {
		s.informer.RunWithContext(klog.NewContext(ctx, klog.FromContext(ctx).WithValues("informer", "services")))
		return nil
	})
}

// watchError notes an API server without services; other errors are the reflector's usual.
func (s *Services) watchError(ctx context.Context, r *cache.Reflector, err error) {
	if apierrors.IsNotFound(err) {
		if s.unserved.CompareAndSwap(false, true) {
			klog.FromContext(ctx).Info("The API server serves no services: pods get no service environment variables until it does", "err", err)
		}
		return
	}
	cache.DefaultWatchErrorHandler(ctx, r, err)
}

// HasSynced says whether Services were listed once, or the API server serves none.
func (s *Services) HasSynced() bool { return s.informer.HasSynced() || s.unserved.Load() }

// EnvFor is the service environment of pod's containers (the kubelet's
// getServiceEnvVarMap). A pod from the API server waits up to defaultSyncWait for the first list of
// Services, and fails with the kubelet's error after it; a static pod, which runs without the
// API server, gets what is known.
func (s *Services) EnvFor(ctx context.Context, pod *v1.Pod) (map[string]string, error) {
	return s.envFor(ctx, pod, nil, false)
}

// EnvForWithStandIn is EnvFor with standIn (APIServerService) as the kubernetes Service while
// the default namespace has none, or always when replace is set: a node without a service
// proxy routes no cluster IPs, so the real Service's would be unreachable from its pods.
func (s *Services) EnvForWithStandIn(standIn *v1.Service, replace bool) func(ctx context.Context, pod *v1.Pod) (map[string]string, error) {
	return func(ctx context.Context, pod *v1.Pod) (map[string]string, error) {
		return s.envFor(ctx, pod, standIn, replace)
	}
}

func (s *Services) envFor(ctx context.Context, pod *v1.Pod, standIn *v1.Service, replace bool) (map[string]string, error) {
	if !kubetypes.IsStaticPod(pod) && !s.HasSynced() {
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, s.syncWait, true, func(context.Context) (bool, error) {
			return s.HasSynced(), nil
		})
		if err != nil {
			return nil, errNotSynced
		}
	}
	enable := pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
	services, err := s.candidates(pod.Namespace, enable, standIn, replace)
	if err != nil {
		return nil, fmt.Errorf("failed to list services when setting up env vars: %w", err)
	}
	return ForServices(services, pod.Namespace, enable), nil
}

// candidates are the services ForServices may pick from: the namespace's (when service
// links are on) and the default namespace's kubernetes Service (standIn when there is none),
// read from the namespace index rather than the whole cluster's list.
func (s *Services) candidates(namespace string, enableServiceLinks bool, standIn *v1.Service, replace bool) ([]*v1.Service, error) {
	var out []*v1.Service
	if enableServiceLinks {
		var err error
		if out, err = s.lister.Services(namespace).List(labels.Everything()); err != nil {
			return nil, err
		}
	}
	if standIn != nil && replace {
		if namespace == metav1.NamespaceDefault {
			// The namespace's own list holds the real one: the stand-in takes its place.
			out = slices.DeleteFunc(out, func(svc *v1.Service) bool { return svc.Name == masterService })
		}
		return append(out, standIn), nil
	}
	master, err := s.lister.Services(metav1.NamespaceDefault).Get(masterService)
	switch {
	case err == nil:
		out = append(out, master)
	case !apierrors.IsNotFound(err):
		return nil, err
	case standIn != nil:
		out = append(out, standIn)
	}
	return out, nil
}
