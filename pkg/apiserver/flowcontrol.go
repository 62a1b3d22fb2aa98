package apiserver

import (
	"fmt"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"
	"k8s.io/client-go/kubernetes"

	"github.com/berth-cluster/berth/pkg/apiserver/flowcontrolbootstrap"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/flowcontrol/flowschema"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/flowcontrol/prioritylevelconfiguration"
)

// addFlowcontrolDefaults registers the defaults of flowcontrol.apiserver.k8s.io/v1. Its
// kinds are selected by metadata only, which the scheme allows without a function.
func addFlowcontrolDefaults(s *runtime.Scheme) {
	addDefaults(s, flowschema.SetDefaults, func(l *flowcontrolv1.FlowSchemaList) []flowcontrolv1.FlowSchema { return l.Items })
	addDefaults(s, prioritylevelconfiguration.SetDefaults, func(l *flowcontrolv1.PriorityLevelConfigurationList) []flowcontrolv1.PriorityLevelConfiguration {
		return l.Items
	})
}

// flowcontrolStorage builds the flowcontrol.apiserver.k8s.io/v1 endpoints: API Priority and
// Fairness' flow schemas and priority levels, with the status its controller writes.
func flowcontrolStorage(getter generic.RESTOptionsGetter) (map[string]rest.Storage, error) {
	schemas, err := flowschema.NewStorage(getter)
	if err != nil {
		return nil, err
	}
	levels, err := prioritylevelconfiguration.NewStorage(getter)
	if err != nil {
		return nil, err
	}
	return map[string]rest.Storage{
		"flowschemas":                        schemas.FlowSchema,
		"flowschemas/status":                 schemas.Status,
		"prioritylevelconfigurations":        levels.PriorityLevelConfiguration,
		"prioritylevelconfigurations/status": levels.Status,
	}, nil
}

// addFlowcontrolBootstrapHook adds kube-apiserver's "priority-and-fairness-config-producer"
// hook, which keeps the default flow schemas and priority levels in the API. It reads them
// through rc's informer factory, which the generic server starts.
func addFlowcontrolBootstrapHook(rc *genericapiserver.RecommendedConfig, bg *background) error {
	producer, err := flowcontrolbootstrap.NewProducer(flowcontrolbootstrap.Default(), rc.SharedInformerFactory.Flowcontrol().V1())
	if err != nil {
		return fmt.Errorf("the %s hook: %w", flowcontrolbootstrap.HookName, err)
	}
	return rc.AddPostStartHook(flowcontrolbootstrap.HookName, func(hc genericapiserver.PostStartHookContext) error {
		return producer.PostStartHook(hc, func(run func()) { bg.Go(hc, flowcontrolbootstrap.HookName, run) })
	})
}

// applyPriorityAndFairness turns on API Priority and Fairness as kube-apiserver does by default:
// requests are classified by the flow schemas and queued fairly within their priority levels'
// share of the server's concurrency (--max-requests-inflight plus
// --max-mutating-requests-inflight, 400 + 200), in place of the two max-in-flight limits. The
// servers of the chain share it; the generic server runs its configuration consumer, which
// writes the schemas' and levels' status, from a post-start hook. It costs some 0.5 MB of
// live heap and ten goroutines (bench/RESULTS.md).
func applyPriorityAndFairness(rc *genericapiserver.RecommendedConfig, client kubernetes.Interface) {
	rc.FlowControl = utilflowcontrol.New(rc.SharedInformerFactory, client.FlowcontrolV1(),
		rc.MaxRequestsInFlight+rc.MaxMutatingRequestsInFlight)
}
