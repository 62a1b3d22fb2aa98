package apiserver

import (
	"fmt"
	"net/http"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/tools/cache"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiregistrationhelper "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1/helper"
	apiregistrationinformers "k8s.io/kube-aggregator/pkg/client/informers/externalversions/apiregistration/v1"
	"k8s.io/kube-aggregator/pkg/controllers/autoregister"
)

// apiServicePriority orders a group among the others (Group, higher first) and a version
// within its group (Version, higher first) in discovery, so kubectl prefers what
// kube-apiserver would have it prefer.
type apiServicePriority struct{ Group, Version int32 }

// apiServicePriorities are kube-apiserver v1.37's priorities for the built-in group
// versions. A group version served without one gets no APIService: kube-apiserver skips it
// too, so that a CRD of that group version never gets stuck behind a built-in one.
var apiServicePriorities = map[schema.GroupVersion]apiServicePriority{
	{Group: "", Version: "v1"}:                             {18000, 1},
	{Group: "events.k8s.io", Version: "v1"}:                {17750, 15},
	{Group: "apps", Version: "v1"}:                         {17800, 15},
	{Group: "authentication.k8s.io", Version: "v1"}:        {17700, 15},
	{Group: "authorization.k8s.io", Version: "v1"}:         {17600, 15},
	{Group: "autoscaling", Version: "v1"}:                  {17500, 15},
	{Group: "autoscaling", Version: "v2"}:                  {17500, 30},
	{Group: "batch", Version: "v1"}:                        {17400, 15},
	{Group: "certificates.k8s.io", Version: "v1"}:          {17300, 15},
	{Group: "networking.k8s.io", Version: "v1"}:            {17200, 15},
	{Group: "policy", Version: "v1"}:                       {17100, 15},
	{Group: "rbac.authorization.k8s.io", Version: "v1"}:    {17000, 15},
	{Group: "storage.k8s.io", Version: "v1"}:               {16800, 15},
	{Group: "apiextensions.k8s.io", Version: "v1"}:         {16700, 15},
	{Group: "admissionregistration.k8s.io", Version: "v1"}: {16700, 15},
	{Group: "scheduling.k8s.io", Version: "v1"}:            {16600, 15},
	{Group: "coordination.k8s.io", Version: "v1"}:          {16500, 15},
	{Group: "node.k8s.io", Version: "v1"}:                  {16300, 15},
	{Group: "discovery.k8s.io", Version: "v1"}:             {16200, 15},
	{Group: "resource.k8s.io", Version: "v1"}:              {16200, 21},
	{Group: "flowcontrol.apiserver.k8s.io", Version: "v1"}: {16100, 21},
	{Group: "storagemigration.k8s.io", Version: "v1"}:      {15800, 15},
}

// localAPIServices are the APIServices of the group versions the chain behind the
// aggregator serves (its listed paths /api/v1 and /apis/GROUP/VERSION), which the
// aggregator's auto-registration keeps from the start.
func localAPIServices(paths []string) []*apiregistrationv1.APIService {
	var out []*apiregistrationv1.APIService
	for _, p := range paths {
		var gv schema.GroupVersion
		switch parts := strings.Split(p, "/"); {
		case p == "/api/v1":
			gv = schema.GroupVersion{Version: "v1"}
		case len(parts) == 4 && parts[1] == "apis":
			gv = schema.GroupVersion{Group: parts[2], Version: parts[3]}
		default:
			continue
		}
		prio, ok := apiServicePriorities[gv]
		if !ok {
			continue
		}
		out = append(out, &apiregistrationv1.APIService{
			ObjectMeta: metav1.ObjectMeta{Name: gv.Version + "." + gv.Group},
			Spec: apiregistrationv1.APIServiceSpec{
				Group:                gv.Group,
				Version:              gv.Version,
				GroupPriorityMinimum: prio.Group,
				VersionPriority:      prio.Version,
			},
		})
	}
	return out
}

// registerLocalAPIServices gives the auto-registration the local APIServices and the shared
// aggregated discovery document their priorities; it returns them.
func registerLocalAPIServices(s *genericapiserver.GenericAPIServer, delegate genericapiserver.DelegationTarget, reg autoregister.AutoAPIServiceRegistration) []*apiregistrationv1.APIService {
	services := localAPIServices(delegate.ListedPaths())
	for _, svc := range services {
		reg.AddAPIServiceToSyncOnStart(svc)
	}
	if m := s.AggregatedDiscoveryGroupManager; m != nil {
		for gv, p := range apiServicePriorities {
			m.SetGroupVersionPriority(metav1.GroupVersion{Group: gv.Group, Version: gv.Version}, int(p.Group), int(p.Version))
		}
	}
	return services
}

// autoregisterCompletion is kube-apiserver's readyz check of that name: ready once every
// local APIService has been seen Available, so that a client never finds a built-in group
// missing from discovery after /readyz said yes.
func autoregisterCompletion(services []*apiregistrationv1.APIService, informer apiregistrationinformers.APIServiceInformer) (healthz.HealthChecker, error) {
	var mu sync.Mutex
	pending := map[string]bool{}
	for _, s := range services {
		pending[s.Name] = true
	}
	seen := func(obj any) {
		svc, ok := obj.(*apiregistrationv1.APIService)
		if !ok || !apiregistrationhelper.IsAPIServiceConditionTrue(svc, apiregistrationv1.Available) {
			return
		}
		mu.Lock()
		delete(pending, svc.Name)
		mu.Unlock()
	}
	if _, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    seen,
		UpdateFunc: func(_, cur any) { seen(cur) },
	}); err != nil {
		return nil, err
	}
	return healthz.NamedCheck("autoregister-completion", func(*http.Request) error {
		mu.Lock()
		defer mu.Unlock()
		if len(pending) > 0 {
			names := make([]string, 0, len(pending))
			for n := range pending {
				names = append(names, n)
			}
			return fmt.Errorf("missing APIService: %v", names)
		}
		return nil
	}), nil
}
