package apiserver

import (
	"fmt"
	"net/url"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	apiextensionsapiserver "k8s.io/apiextensions-apiserver/pkg/apiserver"
	apiextensionsoptions "k8s.io/apiextensions-apiserver/pkg/cmd/server/options"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapifilters "k8s.io/apiserver/pkg/endpoints/filters"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/apiserver/pkg/util/notfoundhandler"
	"k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/informers"
	"k8s.io/klog/v2"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiregistrationv1beta1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1beta1"
	aggregatorapiserver "k8s.io/kube-aggregator/pkg/apiserver"
	aggregatorscheme "k8s.io/kube-aggregator/pkg/apiserver/scheme"
	apiregistrationclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset/typed/apiregistration/v1"
	"k8s.io/kube-aggregator/pkg/controllers/autoregister"
	openapicommon "k8s.io/kube-openapi/pkg/common"

	"github.com/berth-cluster/berth/pkg/apiserver/crdregistration"
	"github.com/berth-cluster/berth/pkg/apiserver/sharedetcd"
)

// The server chain, as kube-apiserver builds it: a request enters the aggregator, which
// serves APIServices and proxies aggregated APIs to their Services; anything else goes to
// berth's own API server (core/v1 and the built-in groups), then to the apiextensions server
// (CustomResourceDefinitions and the custom resources they define), then to a 404.
//
//	aggregator ─► berth's API server ─► apiextensions ─► not found
//
// The three share one generic configuration (authentication, authorization, the admission
// chain, the aggregated discovery document) and one etcd client; each has its own storage
// codecs and resource configuration. Only the aggregator's handler chain (authentication,
// authorization, audit, timeouts) runs: the others are reached through their unprotected
// handlers.

// storageOptions is what the servers after berth's own need of its storage set-up: the etcd
// options (to copy with their own codec) and the getter whose etcd client they share.
type storageOptions struct {
	etcd   *genericoptions.EtcdOptions
	shared *sharedetcd.Getter
}

// serverConfig copies base for another server of the chain, with its own storage under
// codec and its own resource configuration, and none of base's post-start hooks (the chain
// runs each server's hooks; a hook registered twice is an error).
func serverConfig(base genericapiserver.Config, so storageOptions, codec runtime.Codec, versioner runtime.GroupVersioner, resources *serverstorage.ResourceConfig) (genericapiserver.Config, error) {
	c := base
	c.PostStartHooks = map[string]genericapiserver.PostStartHookConfigEntry{}
	c.RESTOptionsGetter = nil
	etcd := *so.etcd
	etcd.StorageConfig.Codec = codec
	etcd.StorageConfig.EncodeVersioner = versioner
	// berth's own server already checks etcd's health.
	etcd.SkipHealthEndpoints = true
	if err := etcd.ApplyTo(&c); err != nil {
		return c, fmt.Errorf("etcd storage: %w", err)
	}
	c.RESTOptionsGetter = so.shared.For(c.RESTOptionsGetter)
	c.MergedResourceConfig = resources
	return c, nil
}

// newAPIExtensions is the apiextensions server of the chain, ending in a 404 as
// kube-apiserver's does. Its CRDs are stored as kube-apiserver stores them (v1beta1 JSON,
// the more compact form), its custom resources as JSON, on the shared etcd client.
func newAPIExtensions(base genericapiserver.Config, factory informers.SharedInformerFactory, so storageOptions, resolver webhook.ServiceResolver, auth webhook.AuthenticationInfoResolverWrapper) (*apiextensionsapiserver.CustomResourceDefinitions, error) {
	c, err := serverConfig(base, so,
		apiextensionsapiserver.Codecs.LegacyCodec(apiextensionsv1beta1.SchemeGroupVersion, apiextensionsv1.SchemeGroupVersion),
		runtime.NewMultiGroupVersioner(apiextensionsv1beta1.SchemeGroupVersion, schema.GroupKind{Group: apiextensionsv1beta1.GroupName}),
		apiextensionsResources())
	if err != nil {
		return nil, fmt.Errorf("apiextensions server: %w", err)
	}
	// Its own /openapi/v2 and /openapi/v3 (the CRDs' schemas, kept up to date by the
	// library's OpenAPI controllers): the aggregator merges them with berth's.
	c.SkipOpenAPIInstallation = false
	c.OpenAPIConfig, c.OpenAPIV3Config = openAPIConfigsOf(c.OpenAPIConfig, c.OpenAPIV3Config,
		"io.k8s.apiextensions-apiserver.", "io.k8s.apimachinery.")
	crdOptions := *so.etcd
	config := &apiextensionsapiserver.Config{
		GenericConfig: &genericapiserver.RecommendedConfig{Config: c, SharedInformerFactory: factory},
		ExtraConfig: apiextensionsapiserver.ExtraConfig{
			CRDRESTOptionsGetter: so.shared.For(apiextensionsoptions.NewCRDRESTOptionsGetter(crdOptions, c.ResourceTransformers, c.StorageObjectCountTracker)),
			MasterCount:          1,
			ServiceResolver:      resolver,
			AuthResolverWrapper:  auth,
		},
	}
	notFound := notfoundhandler.New(c.Serializer, genericapifilters.NoMuxAndDiscoveryIncompleteKey)
	server, err := config.Complete().New(genericapiserver.NewEmptyDelegateWithCustomHandler(notFound))
	if err != nil {
		return nil, fmt.Errorf("apiextensions server: %w", err)
	}
	return server, nil
}

// apiextensionsResources are the versions of apiextensions.k8s.io a v1.37 kube-apiserver
// serves: v1 only (v1beta1 is only the storage version).
func apiextensionsResources() *serverstorage.ResourceConfig {
	r := serverstorage.NewResourceConfig()
	r.EnableVersions(apiextensionsv1.SchemeGroupVersion)
	r.DisableVersions(apiextensionsv1beta1.SchemeGroupVersion)
	return r
}

// newAggregator is the front of the chain: APIServices, their availability, the proxy to
// aggregated APIs, the /apis discovery document and the merged OpenAPI documents.
// It proxies with the front proxy's client certificate, which aggregated servers trust
// through kube-system/extension-apiserver-authentication.
func newAggregator(base genericapiserver.Config, factory informers.SharedInformerFactory, so storageOptions, resolver aggregatorapiserver.ServiceResolver, frontProxy FrontProxyConfig, delegate genericapiserver.DelegationTarget) (*aggregatorapiserver.APIAggregator, error) {
	r := serverstorage.NewResourceConfig()
	r.EnableVersions(apiregistrationv1.SchemeGroupVersion)
	r.DisableVersions(apiregistrationv1beta1.SchemeGroupVersion)
	c, err := serverConfig(base, so,
		aggregatorscheme.Codecs.LegacyCodec(apiregistrationv1.SchemeGroupVersion, apiregistrationv1beta1.SchemeGroupVersion),
		runtime.NewMultiGroupVersioner(apiregistrationv1.SchemeGroupVersion, schema.GroupKind{Group: apiregistrationv1beta1.GroupName}),
		r)
	if err != nil {
		return nil, fmt.Errorf("aggregator: %w", err)
	}
	// The aggregator serves the merged documents with handlers of its own.
	c.SkipOpenAPIInstallation = true
	c.OpenAPIConfig, c.OpenAPIV3Config = openAPIConfigsOf(c.OpenAPIConfig, c.OpenAPIV3Config,
		"io.k8s.kube-aggregator.", "io.k8s.apimachinery.")
	config := &aggregatorapiserver.Config{
		GenericConfig: &genericapiserver.RecommendedConfig{Config: c, SharedInformerFactory: factory},
		ExtraConfig: aggregatorapiserver.ExtraConfig{
			ServiceResolver:     resolver,
			ProxyTransport:      proxyTransport,
			ProxyClientCertFile: frontProxy.ProxyClientCertFile,
			ProxyClientKeyFile:  frontProxy.ProxyClientKeyFile,
		},
	}
	server, err := config.Complete().NewWithDelegate(delegate)
	if err != nil {
		return nil, fmt.Errorf("aggregator: %w", err)
	}
	return server, nil
}

// newServiceResolver finds where an aggregated API's or a webhook's Service is served: at
// one of its ready endpoints, as kube-apiserver with --enable-aggregator-routing does. berth
// does not route through the Service's cluster IP because the API server may run where no
// service proxy does (`berth apiserver` alone, or before `berth up`'s proxy has synced).
// kubernetes.default.svc is the API server itself, reached over loopback.
func newServiceResolver(factory informers.SharedInformerFactory, loopbackHost string) (aggregatorapiserver.ServiceResolver, error) {
	slices, err := proxy.NewEndpointSliceIndexerGetter(factory.Discovery().V1().EndpointSlices())
	if err != nil {
		return nil, fmt.Errorf("endpoint slices for the service resolver: %w", err)
	}
	resolver := aggregatorapiserver.NewEndpointServiceResolver(factory.Core().V1().Services().Lister(), slices)
	if host, err := url.Parse(loopbackHost); err == nil {
		resolver = aggregatorapiserver.NewLoopbackServiceResolver(resolver, host)
	}
	return resolver, nil
}

// registerAPIServices keeps the APIServices of the group versions behind the aggregator:
// the built-in ones of berth's server and the apiextensions server (from the start), and
// those of the CRDs as they come and go; /readyz waits until the built-in ones are Available.
func registerAPIServices(front *aggregatorapiserver.APIAggregator, delegate genericapiserver.DelegationTarget, crds *apiextensionsapiserver.CustomResourceDefinitions, bg *background) error {
	client, err := apiregistrationclient.NewForConfig(front.GenericAPIServer.LoopbackClientConfig)
	if err != nil {
		return fmt.Errorf("apiregistration client: %w", err)
	}
	apiServices := front.APIRegistrationInformers.Apiregistration().V1().APIServices()
	auto := autoregister.NewAutoRegisterController(apiServices, client)
	local := registerLocalAPIServices(front.GenericAPIServer, delegate, auto)
	crdRegistration, err := crdregistration.New(crds.Informers.Apiextensions().V1().CustomResourceDefinitions(), auto)
	if err != nil {
		return err
	}
	err = front.GenericAPIServer.AddPostStartHook("kube-apiserver-autoregistration", func(ctx genericapiserver.PostStartHookContext) error {
		bg.Go(ctx, "crd-autoregister", func() {
			if err := crdRegistration.Run(ctx, 5); err != nil {
				klog.ErrorS(err, "CRD registration ended")
			}
		})
		bg.Go(ctx, "apiservice-autoregister", func() {
			// The CRDs stored first: the auto-registration's first pass deletes the
			// APIServices it was not told about.
			if crdRegistration.WaitForInitialSync(ctx) {
				auto.Run(5, ctx.Done())
			}
		})
		return nil
	})
	if err != nil {
		return err
	}
	check, err := autoregisterCompletion(local, apiServices)
	if err != nil {
		return err
	}
	return front.GenericAPIServer.AddBootSequenceHealthChecks(check)
}

// openAPIConfigsOf copies the OpenAPI configurations for a server of the chain that serves
// only the types whose OpenAPI model names (io.k8s.apimachinery.pkg...) start with prefixes. The OpenAPI builders
// keep every definition their configuration offers while they build, and the servers keep
// their builds: all of berth's types for the apiextensions server's few routes cost some
// 6 MB for nothing.
func openAPIConfigsOf(v2 *openapicommon.Config, v3 *openapicommon.OpenAPIV3Config, prefixes ...string) (*openapicommon.Config, *openapicommon.OpenAPIV3Config) {
	filter := func(get openapicommon.GetOpenAPIDefinitions) openapicommon.GetOpenAPIDefinitions {
		return func(ref openapicommon.ReferenceCallback) map[string]openapicommon.OpenAPIDefinition {
			out := map[string]openapicommon.OpenAPIDefinition{}
			for name, def := range get(ref) {
				for _, p := range prefixes {
					if strings.HasPrefix(name, p) {
						out[name] = def
						break
					}
				}
			}
			return out
		}
	}
	c2, c3 := *v2, *v3
	c2.GetDefinitions = filter(v2.GetDefinitions)
	c3.GetDefinitions = filter(v3.GetDefinitions)
	c3.Definitions = nil
	return &c2, &c3
}
