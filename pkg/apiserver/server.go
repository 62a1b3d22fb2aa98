// Package apiserver is berth's Kubernetes API server: k8s.io/apiserver's generic server with
// the registries of the resources berth serves, stored in etcd. It is where a pod's path
// begins ("kubectl apply ─► API server: decode, default, validate, admit, store in etcd") and
// what every other component watches.
package apiserver

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	apiextensionsapiserver "k8s.io/apiextensions-apiserver/pkg/apiserver"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apimachineryversion "k8s.io/apimachinery/pkg/version"
	webhookinit "k8s.io/apiserver/pkg/admission/plugin/webhook/initializer"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	"k8s.io/apiserver/pkg/authentication/request/union"
	"k8s.io/apiserver/pkg/authentication/request/x509"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	unionauthz "k8s.io/apiserver/pkg/authorization/union"
	discoveryendpoint "k8s.io/apiserver/pkg/endpoints/discovery/aggregated"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/apiserver/pkg/server/healthz"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/klog/v2"
	aggregatorapiserver "k8s.io/kube-aggregator/pkg/apiserver"
	aggregatorscheme "k8s.io/kube-aggregator/pkg/apiserver/scheme"
	openapicommon "k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/common/restfuladapter"

	berthadmission "github.com/berth-cluster/berth/pkg/apiserver/admission"
	"github.com/berth-cluster/berth/pkg/apiserver/openapi"
	"github.com/berth-cluster/berth/pkg/apiserver/rbacbootstrap"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/pod"
	"github.com/berth-cluster/berth/pkg/apiserver/scheme"
	"github.com/berth-cluster/berth/pkg/apiserver/sharedetcd"
	nodeauth "github.com/berth-cluster/berth/pkg/auth/node"
	"github.com/berth-cluster/berth/pkg/auth/rbac"
	"github.com/berth-cluster/berth/pkg/auth/rbac/bootstrappolicy"
	"github.com/berth-cluster/berth/pkg/util/managedfields"
	"github.com/berth-cluster/berth/pkg/version"
)

// Config is what the API server needs to know.
type Config struct {
	// BindAddress and Port are where it serves HTTPS. Port 0 picks a free port.
	BindAddress net.IP
	Port        int
	// ServingCertFile and ServingKeyFile are its TLS certificate and key.
	ServingCertFile, ServingKeyFile string
	// ClientCAFile holds the CA that client certificates must chain to.
	ClientCAFile string
	// FrontProxyConfig is front-proxy authentication, and the client certificate the
	// aggregator presents to aggregated API servers (frontproxy.go).
	FrontProxyConfig

	// KubeletClientCertFile and KubeletClientKeyFile are the client certificate the API server
	// presents to node agents (pods/log); KubeletCAFile is the CA their serving certificates
	// chain to (ClientCAFile when empty).
	KubeletClientCertFile, KubeletClientKeyFile, KubeletCAFile string

	// EtcdServers are the etcd client URLs; EtcdCAFile, EtcdCertFile and EtcdKeyFile secure
	// the connection when etcd wants TLS.
	EtcdServers                           []string
	EtcdCAFile, EtcdCertFile, EtcdKeyFile string
	// EtcdPrefix is the key prefix of every object ("/registry").
	EtcdPrefix string
	// CompactionInterval is how often the API server compacts etcd's history (5 min, as
	// kube-apiserver; 0 leaves compaction to etcd).
	CompactionInterval time.Duration
	// ReadyzChecks are added to /readyz (berth up's components).
	ReadyzChecks []healthz.HealthChecker

	// ServiceAccounts says how service-account tokens are issued and verified.
	ServiceAccounts ServiceAccountConfig

	// ServiceClusterIPRange is where Services' cluster IPs come from: one CIDR, or two
	// (one per family) comma-separated, the default family first ("" is
	// DefaultServiceClusterIPRange). ServiceNodePortRange is where node ports come from
	// ("" is DefaultServiceNodePortRange).
	ServiceClusterIPRange, ServiceNodePortRange string
}

// kube-apiserver's defaults.
const (
	DefaultServiceClusterIPRange = "10.96.0.0/12"
	DefaultServiceNodePortRange  = "30000-32767"
)

// Server is a configured API server, ready to Run.
type Server struct {
	// front is the chain's first server, the aggregator: the one that runs.
	front *aggregatorapiserver.APIAggregator
	// bg holds the goroutines the post-start hooks leave running; Run waits for them.
	bg *background
	// Port is the port it serves on (known once New returns, also when Config.Port was 0).
	Port int
}

// versionProvider reports berth's version at /version; the rest of the effective version
// (emulation and compatibility versions) is the library's.
type versionProvider struct {
	basecompatibility.EffectiveVersion
}

func (versionProvider) Info() *apimachineryversion.Info { return version.Info() }

// servedGroupVersions are the versions installed; the scheme knows a few more types
// (autoscaling/v1 Scale, authentication/v1 TokenRequest) that only travel in subresource
// bodies. policy/v1 serves PodDisruptionBudgets, and its Eviction is pods/eviction's body.
// autoscaling/v2 and v1 serve one HorizontalPodAutoscaler, stored at v2.
var servedGroupVersions = []schema.GroupVersion{
	corev1.SchemeGroupVersion,
	authenticationv1.SchemeGroupVersion,
	authorizationv1.SchemeGroupVersion,
	coordinationv1.SchemeGroupVersion,
	eventsv1.SchemeGroupVersion,
	schedulingv1.SchemeGroupVersion,
	rbacv1.SchemeGroupVersion,
	networkingv1.SchemeGroupVersion,
	discoveryv1.SchemeGroupVersion,
	nodev1.SchemeGroupVersion,
	appsv1.SchemeGroupVersion,
	batchv1.SchemeGroupVersion,
	autoscalingv2.SchemeGroupVersion,
	autoscalingv1.SchemeGroupVersion,
	policyv1.SchemeGroupVersion,
	certificatesv1.SchemeGroupVersion,
	admissionregistrationv1.SchemeGroupVersion,
	storagev1.SchemeGroupVersion,
	flowcontrolv1.SchemeGroupVersion,
	resourcev1.SchemeGroupVersion,
	storagemigrationv1.SchemeGroupVersion,
}

// New builds the API server.
func New(c Config) (*Server, error) {
	rc := genericapiserver.NewRecommendedConfig(scheme.Codecs)
	effective := versionProvider{basecompatibility.NewEffectiveVersionFromString(version.Kubernetes[1:], "", "")}
	rc.EffectiveVersion = effective
	rc.FeatureGate = utilfeature.DefaultFeatureGate

	port, err := applyServing(c, &rc.Config)
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(rc.LoopbackClientConfig)
	if err != nil {
		return nil, fmt.Errorf("loopback client: %w", err)
	}
	// As kube-apiserver's: the informers of admission and the authorizers keep no managedFields.
	rc.SharedInformerFactory = informers.NewSharedInformerFactoryWithOptions(client, 10*time.Minute,
		informers.WithTransform(managedfields.Trim))
	tokens, err := newServiceAccountTokens(c.ServiceAccounts, rc.SharedInformerFactory, client)
	if err != nil {
		return nil, err
	}
	// The node authorizer's graph follows the pods and PVs (and, once served, volume
	// attachments) through the informers admission shares; the generic server starts them.
	nodeGraph := nodeauth.NewGraph()
	if _, err := nodeauth.AddGraphEventHandlers(nodeGraph, nodeauth.Informers{
		Pods:              rc.SharedInformerFactory.Core().V1().Pods().Informer(),
		PersistentVolumes: rc.SharedInformerFactory.Core().V1().PersistentVolumes().Informer(),
	}); err != nil {
		return nil, fmt.Errorf("node authorizer: %w", err)
	}
	bg := &background{}
	rules, err := applyAuth(c, &rc.Config, rc.SharedInformerFactory, tokens, nodeGraph, bg)
	if err != nil {
		return nil, err
	}
	storage, err := applyStorage(c, &rc.Config, effective)
	if err != nil {
		return nil, err
	}
	applyOpenAPI(&rc.Config)
	rc.AddReadyzChecks(c.ReadyzChecks...)
	rc.BuildHandlerChainFunc = func(apiHandler http.Handler, c *genericapiserver.Config) http.Handler {
		return genericapiserver.DefaultBuildHandlerChain(withStrategicPatchCheck(apiHandler), c)
	}
	// A watch ends when the server shuts down, as the clients of an HA kube-apiserver expect;
	// without this, an outside client's open watch (a node agent, a controller) holds the HTTP
	// server's Shutdown for the whole request timeout, a minute.
	rc.ShutdownWatchTerminationGracePeriod = 2 * time.Second

	dynamicClient, err := dynamic.NewForConfig(rc.LoopbackClientConfig)
	if err != nil {
		return nil, fmt.Errorf("loopback dynamic client: %w", err)
	}
	rc.ClientConfig = rc.LoopbackClientConfig
	// Webhooks (admission and CRD conversion) and aggregated APIs are reached at their
	// Services' endpoints; their clients authenticate as kube-apiserver's do.
	resolver, err := newServiceResolver(rc.SharedInformerFactory, rc.LoopbackClientConfig.Host)
	if err != nil {
		return nil, err
	}
	webhookAuth := webhook.NewDefaultAuthenticationInfoResolverWrapper(proxyTransport, nil, rc.LoopbackClientConfig, rc.TracerProvider)
	admissionOptions := genericoptions.NewAdmissionOptions()
	berthadmission.Register(admissionOptions.Plugins)
	admissionOptions.RecommendedPluginOrder = berthadmission.Order
	if err := admissionOptions.ApplyTo(&rc.Config, rc.SharedInformerFactory, client, dynamicClient, rc.FeatureGate, effective,
		webhookinit.NewPluginInitializer(webhookAuth, resolver)); err != nil {
		return nil, fmt.Errorf("admission: %w", err)
	}
	rc.AddPostStartHookOrDie("berth-bootstrap", func(ctx genericapiserver.PostStartHookContext) error {
		go bootstrap(ctx, client)
		return nil
	})
	// API Priority and Fairness' default flow schemas and priority levels, and the filter
	// that classifies and queues requests by them (flowcontrol.go).
	if err := addFlowcontrolBootstrapHook(rc, bg); err != nil {
		return nil, err
	}
	applyPriorityAndFairness(rc, client)
	// The bootstrap roles are reconciled once the RBAC API is served; until then there is
	// nothing to write them to, and a hook that never finishes would keep /readyz failing.
	if slices.Contains(servedGroupVersions, rbacv1.SchemeGroupVersion) {
		policy, err := bootstrapPolicy(c)
		if err != nil {
			return nil, err
		}
		reconcile := rbacbootstrap.PostStartHook(policy)
		cached := rc.SharedInformerFactory.Rbac().V1()
		rc.AddPostStartHookOrDie(rbacbootstrap.HookName, func(ctx genericapiserver.PostStartHookContext) error {
			if err := reconcile(ctx); err != nil {
				return err
			}
			return rbacbootstrap.WaitCached(ctx, cached.ClusterRoles().Lister(), cached.ClusterRoleBindings().Lister(), policy)
		})
	}

	// The chain (chain.go): the other two servers start from this configuration as it is
	// now, before berth's own server completes it, and they all publish their groups in one
	// aggregated discovery document.
	rc.AggregatedDiscoveryGroupManager = discoveryendpoint.NewResourceManager("apis")
	base := rc.Config
	crds, err := newAPIExtensions(base, rc.SharedInformerFactory, storage, resolver, webhookAuth)
	if err != nil {
		return nil, err
	}
	completed := rc.Complete()
	gs, err := completed.New("berth-apiserver", crds.GenericAPIServer)
	if err != nil {
		return nil, fmt.Errorf("creating the generic API server: %w", err)
	}
	kubeletCA := c.KubeletCAFile
	if kubeletCA == "" {
		kubeletCA = c.ClientCAFile
	}
	kubelet, err := pod.NewKubeletConnection(kubeletCA, c.KubeletClientCertFile, c.KubeletClientKeyFile)
	if err != nil {
		return nil, err
	}
	if err := installAPIs(c, endpoint{ip: rc.PublicAddress, port: port}, gs, rc.RESTOptionsGetter, kubelet, rc.Authorization.Authorizer, rules, tokens); err != nil {
		return nil, err
	}
	tokens.installOpenID(gs, completed.ExternalAddress)
	installLazyOpenAPI(gs, rc.OpenAPIConfig, rc.OpenAPIV3Config)
	front, err := newAggregator(base, rc.SharedInformerFactory, storage, resolver, c.FrontProxyConfig, gs)
	if err != nil {
		return nil, err
	}
	if err := registerAPIServices(front, gs, crds, bg); err != nil {
		return nil, err
	}
	return &Server{front: front, bg: bg, Port: port}, nil
}

// Run serves until ctx is done, then shuts down: it stops accepting requests, lets running
// ones finish, and closes the watches and the storage.
func (s *Server) Run(ctx context.Context) error {
	prepared, err := s.front.PrepareRun()
	if err != nil {
		return err
	}
	err = prepared.Run(ctx)
	s.bg.wait()
	return err
}

func applyServing(c Config, gc *genericapiserver.Config) (int, error) {
	ss := genericoptions.NewSecureServingOptions().WithLoopback()
	ss.BindAddress = c.BindAddress
	if ss.BindAddress == nil {
		ss.BindAddress = net.IPv4zero
	}
	ss.ServerCert.CertKey = genericoptions.CertKey{CertFile: c.ServingCertFile, KeyFile: c.ServingKeyFile}
	ln, port, err := genericoptions.CreateListener("tcp", net.JoinHostPort(ss.BindAddress.String(), strconv.Itoa(c.Port)), net.ListenConfig{})
	if err != nil {
		return 0, err
	}
	ss.Listener, ss.BindPort = ln, port
	if err := ss.ApplyTo(&gc.SecureServing, &gc.LoopbackClientConfig); err != nil {
		ln.Close()
		return 0, fmt.Errorf("secure serving: %w", err)
	}
	// The address clients elsewhere reach the server at (kube-apiserver's default
	// --advertise-address): discovery's server address and the JWKS's URL. A machine with
	// no routable address (a sandbox) still gets a working single-machine cluster.
	if gc.PublicAddress, err = ss.DefaultExternalAddress(); err != nil {
		klog.InfoS("No routable address to advertise; using the loopback address", "err", err)
		gc.PublicAddress = net.IPv4(127, 0, 0, 1)
	}
	// Of the service range's family, as kube-apiserver requires of --advertise-address: pods
	// reach it through the kubernetes Service, and the JWKS URL, which names it, from pods too.
	if cidrs, _, err := parseServiceRanges(c); err == nil {
		gc.PublicAddress = publicIP(gc.PublicAddress, cidrs[0])
	}
	// The server talks to itself a lot (admission informers, bootstrap): protobuf is cheaper.
	gc.LoopbackClientConfig.ContentType = runtime.ContentTypeProtobuf
	// And uncompressed, as kube-apiserver's: every one of its watches would otherwise hold a
	// gzip writer at the server's end and a reader at the client's, for no gain in process.
	gc.LoopbackClientConfig.DisableCompression = true
	return port, nil
}

// applyAuth authenticates front proxies' requests as the user in their headers, clients by
// certificates from the cluster CA (the groups are the certificate's organizations, so
// system:masters in the admin kubeconfig) and by service-account tokens, and requests
// without credentials to the public paths as system:anonymous; it publishes how in
// kube-system/extension-apiserver-authentication. It authorizes as kube-apiserver's --authorization-mode=Node,RBAC:
// system:masters may do everything, nodes what the node authorizer allows them over
// nodeGraph, everyone (anonymous included: the public paths, discovery, who-am-I) what RBAC
// allows, read through factory's informers. It returns the rule resolver of the rules
// reviews.
func applyAuth(c Config, gc *genericapiserver.Config, factory informers.SharedInformerFactory, tokens *serviceAccountTokens, nodeGraph *nodeauth.Graph, bg *background) (authorizer.RuleResolver, error) {
	ca, err := dynamiccertificates.NewDynamicCAContentFromFile("client-ca", c.ClientCAFile)
	if err != nil {
		return nil, fmt.Errorf("client CA: %w", err)
	}
	if err := gc.Authentication.ApplyClientCert(ca, gc.SecureServing); err != nil {
		return nil, fmt.Errorf("client CA: %w", err)
	}
	// A front proxy's requests first, as kube-apiserver orders them: its certificate is from
	// the request-header CA, the user it acts for in the headers.
	var authenticators []authenticator.Request
	requestHeader, err := c.requestHeaderConfig()
	if err != nil {
		return nil, err
	}
	if requestHeader != nil {
		gc.Authentication.RequestHeaderConfig = requestHeader
		if err := gc.Authentication.ApplyClientCert(requestHeader.CAContentProvider, gc.SecureServing); err != nil {
			return nil, fmt.Errorf("request-header client CA: %w", err)
		}
		authenticators = append(authenticators, group.NewAuthenticatedGroupAdder(headerrequest.NewDynamicVerifyOptionsSecure(
			requestHeader.CAContentProvider.VerifyOptions, requestHeader.AllowedClientNames,
			requestHeader.UsernameHeaders, requestHeader.UIDHeaders, requestHeader.GroupHeaders, requestHeader.ExtraHeaderPrefixes)))
	}
	if err := gc.AddPostStartHook(authenticationInfoHook, publishAuthenticationInfo(authenticationInfo{clientCA: ca, requestHeader: requestHeader}, bg)); err != nil {
		return nil, err
	}
	certs := newCachedCertAuthenticator(x509.NewDynamic(ca.VerifyOptions, x509.CommonNameUserConversion))
	authenticators = append(authenticators, group.NewAuthenticatedGroupAdder(certs))
	if sa := tokens.requestAuthenticator(); sa != nil {
		authenticators = append(authenticators, sa)
	}
	gc.Authentication.Authenticator = union.New(append(authenticators, publicAuthenticator{})...)
	gc.Authentication.APIAudiences = tokens.audiences
	nodeAuthz := nodeauth.NewAuthorizer(nodeGraph, bootstrappolicy.NodeRules())
	authorizers := []unionauthz.NamedAuthorizer{
		{AuthorizerName: "system:masters", Authorizer: authorizerfactory.NewPrivilegedGroups(user.SystemPrivilegedGroup)},
		// Named as kube-apiserver names its --authorization-mode=Node authorizer: the name
		// prefixes its reasons in a 403 ("node: no relationship found ...").
		{AuthorizerName: "node", Authorizer: nodeAuthz},
	}
	rbacv1informers := factory.Rbac().V1()
	rbacAuthz := rbac.NewFromListers(rbacv1informers.Roles().Lister(), rbacv1informers.RoleBindings().Lister(),
		rbacv1informers.ClusterRoles().Lister(), rbacv1informers.ClusterRoleBindings().Lister())
	authz, err := unionauthz.New(append(authorizers,
		unionauthz.NamedAuthorizer{AuthorizerName: "rbac", Authorizer: rbacAuthz},
	)...)
	if err != nil {
		return nil, fmt.Errorf("authorizer: %w", err)
	}
	gc.Authorization.Authorizer = authz
	genericapiserver.AuthorizeClientBearerToken(gc.LoopbackClientConfig, &gc.Authentication, &gc.Authorization)
	// As kube-apiserver's: the node authorizer cannot list a node's rules and says the list
	// is incomplete; RBAC lists everyone's.
	return unionauthz.NewRuleResolvers(nodeAuthz, rbacAuthz), nil
}

// applyStorage keeps every resource in etcd as protobuf, under the external version, behind
// the watch cache — except events, which kube-apiserver also keeps out of it: they are
// written often, read rarely and expire, so caching them costs memory and decoding for
// nothing. The two event resources share one prefix, as in Kubernetes. All resources share
// one etcd client (package sharedetcd).
func applyStorage(c Config, gc *genericapiserver.Config, effective basecompatibility.EffectiveVersion) (storageOptions, error) {
	prefix := c.EtcdPrefix
	if prefix == "" {
		prefix = "/registry"
	}
	etcd := genericoptions.NewEtcdOptions(storagebackend.NewDefaultConfig(prefix, nil))
	etcd.StorageConfig.Transport.ServerList = c.EtcdServers
	etcd.StorageConfig.Transport.TrustedCAFile = c.EtcdCAFile
	etcd.StorageConfig.Transport.CertFile = c.EtcdCertFile
	etcd.StorageConfig.Transport.KeyFile = c.EtcdKeyFile
	etcd.StorageConfig.CompactionInterval = c.CompactionInterval
	etcd.DefaultStorageMediaType = runtime.ContentTypeProtobuf
	// Which resources sit behind the watch cache is sharedetcd.Getter's to decide: it
	// replaces the decorator the factory's getter picks, so no --watch-cache-sizes here.
	etcd.EnableWatchCache = true
	uncached := []schema.GroupResource{corev1.Resource("events"), eventsv1.Resource("events"), nodePortAllocations, apiServerLeases}

	resources := serverstorage.NewResourceConfig()
	resources.EnableVersions(servedGroupVersions...)
	encoding := serverstorage.NewDefaultResourceEncodingConfigForEffectiveVersion(scheme.Scheme, effective)
	factory := serverstorage.NewDefaultStorageFactory(etcd.StorageConfig, etcd.DefaultStorageMediaType,
		scheme.Codecs, encoding, resources, nil)
	factory.AddCohabitatingResources(corev1.Resource("events"), eventsv1.Resource("events"))
	gc.MergedResourceConfig = resources
	if err := etcd.ApplyWithStorageFactoryTo(factory, gc); err != nil {
		return storageOptions{}, fmt.Errorf("etcd storage: %w", err)
	}
	shared := sharedetcd.NewGetter(gc.RESTOptionsGetter, uncached...)
	gc.RESTOptionsGetter = shared
	return storageOptions{etcd: etcd, shared: shared}, nil
}

func applyOpenAPI(gc *genericapiserver.Config) {
	namer := openapinamer.NewDefinitionNamer(scheme.External, apiextensionsapiserver.Scheme, aggregatorscheme.Scheme)
	gc.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(openapi.GetOpenAPIDefinitions, namer)
	gc.OpenAPIConfig.Info.Title = "Kubernetes"
	gc.OpenAPIConfig.Info.Version = version.GitVersion()
	gc.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(openapi.GetOpenAPIDefinitions, namer)
	gc.OpenAPIV3Config.Info.Title = "Kubernetes"
	gc.OpenAPIV3Config.Info.Version = version.GitVersion()
	gc.OpenAPIConfig.GetOperationIDAndTagsFromRoute = operationIDAndTags
	gc.OpenAPIV3Config.GetOperationIDAndTagsFromRoute = operationIDAndTags
	// Served by installLazyOpenAPI instead.
	gc.SkipOpenAPIInstallation = true
}

// operationIDAndTags names a route's operation as the generic server does
// (GetOperationIDAndTags). The OpenAPI builders would set the same on the configuration they
// are given the first time they build, in a closure that keeps that first build (every
// definition of every type, 3 MB) for as long as the configuration lives: the server's life.
func operationIDAndTags(r openapicommon.Route) (string, []string, error) {
	route, ok := r.(*restfuladapter.RouteAdapter)
	if !ok {
		return "", nil, fmt.Errorf("route %s %s is not a go-restful route", r.Method(), r.Path())
	}
	return openapinamer.GetOperationIDAndTags(route.Route)
}

// bootstrapPolicy is what the API server reconciles at start: kube-apiserver's bootstrap
// policy, and the binding that lets its kubelet client use the node API.
func bootstrapPolicy(c Config) (bootstrappolicy.Policy, error) {
	policy := bootstrappolicy.Default()
	if c.KubeletClientCertFile != "" {
		kubeletClient, err := certificateUser(c.KubeletClientCertFile)
		if err != nil {
			return policy, fmt.Errorf("kubelet client certificate: %w", err)
		}
		policy.ClusterRoleBindings = append(policy.ClusterRoleBindings, kubeletClientBinding(kubeletClient))
	}
	return policy, nil
}
