package admission

import (
	"fmt"
	"io"

	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/resourcequota"
	"k8s.io/apiserver/pkg/admission/plugin/resourcequota/apis/resourcequota/validation"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/quota/evaluator"
)

// ResourceQuotaPluginName is the name Kubernetes gives this plugin.
const ResourceQuotaPluginName = resourcequota.PluginName

// quotaEvaluationWorkers is how many namespaces' quota checks run at once
// (kube-apiserver's 5).
const quotaEvaluationWorkers = 5

func registerResourceQuota(plugins *admission.Plugins) {
	plugins.Register(ResourceQuotaPluginName, func(config io.Reader) (admission.Interface, error) {
		configuration, err := resourcequota.LoadConfiguration(config)
		if err != nil {
			return nil, fmt.Errorf("loading the ResourceQuota configuration: %w", err)
		}
		if errs := validation.ValidateConfiguration(configuration); len(errs) != 0 {
			return nil, errs.ToAggregate()
		}
		plugin, err := resourcequota.NewResourceQuota(configuration, quotaEvaluationWorkers)
		if err != nil {
			return nil, err
		}
		return &resourceQuota{plugin}, nil
	})
}

// resourceQuota is kube-apiserver's ResourceQuota plugin (k8s.io/apiserver's), given berth's
// evaluators: a create or update that would take a namespace's usage past a quota's
// status.hard is refused, 403 "exceeded quota: NAME, requested: ..., used: ..., limited:
// ...", and otherwise the quota's status.used is raised at once, before the object is
// stored, so that two requests cannot both spend the last of it. The resource-quota
// controller recounts the usage from what is stored.
//
// kube-apiserver hands the plugin its quota configuration through an initializer of its own;
// berth does it here, when the generic initializer hands over the stop channel, which the
// plugin needs first.
type resourceQuota struct {
	*resourcequota.QuotaAdmission
}

// SetDrainedNotification passes stopCh on and sets the quota configuration, which starts the
// plugin's evaluation workers on the first request and stops them with stopCh.
func (r *resourceQuota) SetDrainedNotification(stopCh <-chan struct{}) {
	r.QuotaAdmission.SetDrainedNotification(stopCh)
	r.SetQuotaConfiguration(evaluator.NewConfiguration(nil, clock.RealClock{}))
}
