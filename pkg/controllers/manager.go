// Package controllers is berth's controller manager: the control loops that stand beside the
// pod's flow ("kubectl apply ─► API server ─► scheduler ─► node agent") as ordinary clients of
// the API server. Each watches what the API server stores through one shared set of
// informers and writes its corrections back through the API. DESIGN.md gives this folder node
// lifecycle, podCIDR allocation, pod GC, namespaces and service accounts; today it runs:
//
//   - namespace: empties namespaces being deleted, then finalizes them;
//   - serviceaccount: keeps a "default" service account in every active namespace;
//   - root-ca-cert-publisher: keeps the ConfigMap kube-root-ca.crt (the CA bundle that
//     verifies the API server, which pods read from their kube-api-access volume) in every
//     namespace;
//   - nodelifecycle: taints nodes by their conditions (memory-pressure, not-ready, ...);
//   - clusterrole-aggregation: gives aggregated ClusterRoles (admin, edit, view) the rules of
//     the roles they select;
//   - endpointslice: keeps the EndpointSlices of Services with selectors from their ready pods
//     (the service proxy and the cluster DNS read them);
//   - endpoints: keeps the (deprecated, still read) core/v1 Endpoints of the same Services;
//   - endpointslice-mirroring: mirrors the Endpoints users write for Services without
//     selectors into EndpointSlices;
//   - service-cidr: marks ServiceCIDRs Ready, and holds a deleted one until no cluster IP
//     inside it is left;
//   - the workloads': replicaset and replicationcontroller (one reconcile) keep a set's pods;
//     deployment rolls ReplicaSets; statefulset and daemonset keep ordered pods and a pod per
//     node, with ControllerRevisions as their history; job, cronjob and ttl-after-finished run
//     pods to completion, on a schedule, and clean finished Jobs up; disruption keeps the
//     PodDisruptionBudgets' status that pods/eviction reads;
//   - garbagecollector deletes what ownerReferences say has lost its owners (background,
//     foreground and orphan propagation); podgc deletes terminated pods over the threshold and
//     pods of deleted nodes;
//   - csrapproving approves kubelets' client CSRs per SubjectAccessReview, csrsigning signs
//     approved CSRs of Kubernetes' signers with the cluster CA (--cluster-signing-cert-file),
//     and csrcleaner deletes CSRs once done with or abandoned;
//   - pvc-protection and pv-protection remove the protection
//     finalizers of deleted claims no pod uses and of deleted volumes no claim is bound to;
//   - resourcequota keeps each ResourceQuota's status.hard and status.used, which the API
//     server's ResourceQuota admission enforces;
//   - validatingadmissionpolicy-status type-checks ValidatingAdmissionPolicies' expressions
//     and publishes the warnings in their status.
//
// `berth up` and `berth controllers` call Run. With leader election, replicas share one
// coordination.k8s.io Lease and only its holder runs the controllers.
//
// One object never takes a controller down, and one controller never takes the others (or
// the process) down: each reconcile of one key recovers a panic (pkg/controllers/recovery)
// and requeues the key with back-off, and a controller whose Run stops early is built and
// started again after a back-off.
package controllers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	apiextensionsscheme "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	validatingpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/controller-manager/pkg/clientbuilder"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/apiserver/openapi"
	"github.com/berth-cluster/berth/pkg/controllers/clusterroleaggregation"
	"github.com/berth-cluster/berth/pkg/controllers/cronjob"
	"github.com/berth-cluster/berth/pkg/controllers/daemonset"
	"github.com/berth-cluster/berth/pkg/controllers/deployment"
	"github.com/berth-cluster/berth/pkg/controllers/disruption"
	"github.com/berth-cluster/berth/pkg/controllers/endpoints"
	"github.com/berth-cluster/berth/pkg/controllers/endpointslice"
	"github.com/berth-cluster/berth/pkg/controllers/endpointslicemirroring"
	"github.com/berth-cluster/berth/pkg/controllers/garbagecollector"
	"github.com/berth-cluster/berth/pkg/controllers/job"
	"github.com/berth-cluster/berth/pkg/controllers/namespace"
	"github.com/berth-cluster/berth/pkg/controllers/nodelifecycle"
	"github.com/berth-cluster/berth/pkg/controllers/podgc"
	"github.com/berth-cluster/berth/pkg/controllers/pvcprotection"
	"github.com/berth-cluster/berth/pkg/controllers/pvprotection"
	"github.com/berth-cluster/berth/pkg/controllers/recovery"
	"github.com/berth-cluster/berth/pkg/controllers/replicaset"
	"github.com/berth-cluster/berth/pkg/controllers/resourcequota"
	"github.com/berth-cluster/berth/pkg/controllers/rootcacertpublisher"
	"github.com/berth-cluster/berth/pkg/controllers/serviceaccount"
	"github.com/berth-cluster/berth/pkg/controllers/servicecidrs"
	"github.com/berth-cluster/berth/pkg/controllers/sharedmetadata"
	"github.com/berth-cluster/berth/pkg/controllers/statefulset"
	"github.com/berth-cluster/berth/pkg/controllers/ttlafterfinished"
	"github.com/berth-cluster/berth/pkg/controllers/validatingadmissionpolicystatus"
	"github.com/berth-cluster/berth/pkg/util/managedfields"
	"github.com/berth-cluster/berth/pkg/util/panics"
)

// controllerContext is what every controller is built from: clients, the shared informers
// and the event broadcaster.
type controllerContext struct {
	// client is the manager's own client (system:kube-controller-manager in berth up): the
	// shared informers and the events use it.
	client    kubernetes.Interface
	metadata  metadata.Interface
	discovery discovery.DiscoveryInterface
	informers informers.SharedInformerFactory
	// metadataInformers are the metadata-only informers of resources without a typed
	// informer (custom resources), shared by the garbage collector and the resource-quota
	// controller so that each such resource is watched once.
	metadataInformers *sharedmetadata.Informers
	broadcaster       events.EventBroadcaster
	// rootCA is the CA bundle published in every namespace.
	rootCA []byte
	// terminatedPodGCThreshold is how many terminated pods pod GC keeps.
	terminatedPodGCThreshold int
	// signing is the CA and duration csrsigning signs with.
	signing signingOptions
	// enabled is the indices in controllers of those to run.
	enabled []int
	// credentials gives each controller the client config it writes with: its own service
	// account's (--use-service-account-credentials), or the manager's; nil means client and
	// metadata.
	credentials clientbuilder.ControllerClientBuilder
}

// clients are what a controller writes with: those of its service account, or the manager's.
type clients struct {
	client   kubernetes.Interface
	metadata metadata.Interface
}

// clientsFor builds the clients of the controller whose service account in kube-system is
// account ("namespace-controller", as kube-controller-manager names them).
func (c controllerContext) clientsFor(account string) (clients, error) {
	if c.credentials == nil {
		return clients{client: c.client, metadata: c.metadata}, nil
	}
	config, err := c.credentials.Config(account)
	if err != nil {
		return clients{}, fmt.Errorf("the credentials of %s: %w", account, err)
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return clients{}, err
	}
	meta, err := metadata.NewForConfig(config)
	if err != nil {
		return clients{}, err
	}
	return clients{client: client, metadata: meta}, nil
}

// recorder is the event recorder of the controller named name ("namespace-controller" is
// the events' reporting controller, as kube-controller-manager names them).
func (c controllerContext) recorder(name string) events.EventRecorder {
	if c.broadcaster == nil {
		return nil
	}
	return c.broadcaster.NewRecorder(scheme.Scheme, name+"-controller")
}

// controller is a built control loop; Run blocks until ctx is done and its workers stopped.
// It returns an error when it stopped for another reason; the manager then builds and runs it
// again after a back-off.
type controller interface {
	Run(ctx context.Context, workers int) error
}

// controllers are the control loops Run starts; adding one is adding a line. account is the
// service account each writes as with --use-service-account-credentials, bound to its
// system:controller:<account> role by the bootstrap policy. Worker counts follow
// kube-controller-manager's, except that service accounts get several workers because
// clients wait on "default" before they can create pods in a new namespace.
var controllers = []controllerEntry{
	{"namespace", "namespace-controller", 10, func(c controllerContext, cl clients) controller {
		ctrl := namespace.NewController(cl.client, cl.metadata, cl.client.Discovery(), c.informers.Core().V1().Namespaces())
		ctrl.Recorder = c.recorder("namespace")
		return ctrl
	}},
	{"nodelifecycle", "node-controller", 1, func(c controllerContext, cl clients) controller {
		ctrl := nodelifecycle.NewController(cl.client, c.informers.Core().V1().Nodes())
		ctrl.Recorder = c.recorder("node-lifecycle")
		return ctrl
	}},
	{"clusterrole-aggregation", "clusterrole-aggregation-controller", 5, func(c controllerContext, cl clients) controller {
		ctrl := clusterroleaggregation.NewController(cl.client.RbacV1(), c.informers.Rbac().V1().ClusterRoles())
		ctrl.Recorder = c.recorder("clusterrole-aggregation")
		return ctrl
	}},
	{"serviceaccount", "service-account-controller", 5, func(c controllerContext, cl clients) controller {
		ctrl := serviceaccount.NewController(cl.client, c.informers.Core().V1().Namespaces(), c.informers.Core().V1().ServiceAccounts())
		ctrl.Recorder = c.recorder("serviceaccount")
		return ctrl
	}},
	{"endpointslice", "endpointslice-controller", 5, func(c controllerContext, cl clients) controller {
		ctrl := endpointslice.NewController(cl.client, c.informers.Core().V1().Pods(), c.informers.Core().V1().Services(),
			c.informers.Core().V1().Nodes(), c.informers.Discovery().V1().EndpointSlices(), 100)
		ctrl.Recorder = c.recorder("endpoint-slice")
		return ctrl
	}},
	{"endpoints", "endpoint-controller", 5, func(c controllerContext, cl clients) controller {
		ctrl := endpoints.NewController(cl.client, c.informers.Core().V1().Pods(), c.informers.Core().V1().Services(), c.informers.Core().V1().Endpoints())
		ctrl.Recorder = c.recorder("endpoint")
		return ctrl
	}},
	{"endpointslice-mirroring", "endpointslicemirroring-controller", 5, func(c controllerContext, cl clients) controller {
		ctrl := endpointslicemirroring.NewController(cl.client, c.informers.Core().V1().Endpoints(), c.informers.Discovery().V1().EndpointSlices(), c.informers.Core().V1().Services())
		ctrl.Recorder = c.recorder("endpoint-slice-mirroring")
		return ctrl
	}},
	{"service-cidr", "service-cidrs-controller", 5, func(c controllerContext, cl clients) controller {
		ctrl := servicecidrs.NewController(cl.client, c.informers.Networking().V1().ServiceCIDRs(), c.informers.Networking().V1().IPAddresses())
		ctrl.Recorder = c.recorder("service-cidr")
		return ctrl
	}},
	{"replicaset", "replicaset-controller", 5, func(c controllerContext, cl clients) controller {
		ctrl := replicaset.NewReplicaSetController(cl.client, c.informers.Apps().V1().ReplicaSets(), c.informers.Core().V1().Pods())
		ctrl.Recorder = c.recorder("replicaset")
		return ctrl
	}},
	{"replicationcontroller", "replication-controller", 5, func(c controllerContext, cl clients) controller {
		ctrl := replicaset.NewReplicationManager(cl.client, c.informers.Core().V1().ReplicationControllers(), c.informers.Core().V1().Pods())
		ctrl.Recorder = c.recorder("replication")
		return ctrl
	}},
	{"deployment", "deployment-controller", 5, func(c controllerContext, cl clients) controller {
		ctrl := deployment.NewDeploymentController(cl.client, c.informers.Apps().V1().Deployments(),
			c.informers.Apps().V1().ReplicaSets(), c.informers.Core().V1().Pods())
		ctrl.Recorder = c.recorder("deployment")
		return ctrl
	}},
	{"statefulset", "statefulset-controller", 5, func(c controllerContext, cl clients) controller {
		ctrl := statefulset.NewStatefulSetController(cl.client, c.informers.Core().V1().Pods(),
			c.informers.Apps().V1().StatefulSets(), c.informers.Apps().V1().ControllerRevisions())
		ctrl.Recorder = c.recorder("statefulset")
		return ctrl
	}},
	{"daemonset", "daemon-set-controller", 2, func(c controllerContext, cl clients) controller {
		ctrl := daemonset.NewDaemonSetsController(cl.client, c.informers.Apps().V1().DaemonSets(),
			c.informers.Apps().V1().ControllerRevisions(), c.informers.Core().V1().Pods(), c.informers.Core().V1().Nodes())
		ctrl.Recorder = c.recorder("daemonset")
		return ctrl
	}},
	{"job", "job-controller", 5, func(c controllerContext, cl clients) controller {
		ctrl := job.NewController(cl.client, c.informers.Core().V1().Pods(), c.informers.Batch().V1().Jobs())
		ctrl.Recorder = c.recorder("job")
		return ctrl
	}},
	{"cronjob", "cronjob-controller", 5, func(c controllerContext, cl clients) controller {
		ctrl := cronjob.NewController(cl.client, c.informers.Batch().V1().Jobs(), c.informers.Batch().V1().CronJobs())
		ctrl.Recorder = c.recorder("cronjob")
		return ctrl
	}},
	{"ttl-after-finished", "ttl-after-finished-controller", 5, func(c controllerContext, cl clients) controller {
		ctrl := ttlafterfinished.NewController(cl.client, c.informers.Batch().V1().Jobs())
		ctrl.Recorder = c.recorder("ttl-after-finished")
		return ctrl
	}},
	{"disruption", "disruption-controller", 1, func(c controllerContext, cl clients) controller {
		ctrl := disruption.NewController(cl.client, c.informers.Core().V1().Pods(), c.informers.Policy().V1().PodDisruptionBudgets(),
			c.informers.Core().V1().ReplicationControllers(), c.informers.Apps().V1().ReplicaSets(),
			c.informers.Apps().V1().Deployments(), c.informers.Apps().V1().StatefulSets())
		ctrl.Recorder = c.recorder("disruption")
		return ctrl
	}},
	{"garbagecollector", "generic-garbage-collector", 20, func(c controllerContext, cl clients) controller {
		// Its own discovery cache, reset by the collector's re-discovery every 30 s.
		mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cl.client.Discovery()))
		ctrl, err := garbagecollector.NewGarbageCollector(cl.metadata, mapper, cl.client.Discovery(), nil)
		if err != nil {
			return failed{err}
		}
		ctrl.Recorder = c.recorder("garbage-collector")
		ctrl.Shared = startedInformers{c.informers}
		ctrl.Metadata = c.metadataInformers
		return ctrl
	}},
	{"podgc", "pod-garbage-collector", 1, func(c controllerContext, cl clients) controller {
		return podgc.NewPodGC(cl.client, c.informers.Core().V1().Pods(), c.informers.Core().V1().Nodes(), c.terminatedPodGCThreshold)
	}},
	{"pvc-protection", "pvc-protection-controller", 1, func(c controllerContext, cl clients) controller {
		ctrl := pvcprotection.NewController(cl.client, c.informers.Core().V1().PersistentVolumeClaims(), c.informers.Core().V1().Pods())
		ctrl.Recorder = c.recorder("pvc-protection")
		return ctrl
	}},
	{"pv-protection", "pv-protection-controller", 1, func(c controllerContext, cl clients) controller {
		ctrl := pvprotection.NewController(cl.client, c.informers.Core().V1().PersistentVolumes())
		ctrl.Recorder = c.recorder("pv-protection")
		return ctrl
	}},
	{"resourcequota", "resourcequota-controller", 5, func(c controllerContext, cl clients) controller {
		// What it counts is what the server serves, discovered again every 30 s; custom
		// resources through the metadata informers it shares with the garbage collector.
		ctrl := resourcequota.NewController(cl.client.CoreV1(), c.informers, c.metadataInformers,
			cl.client.Discovery().ServerPreferredNamespacedResources)
		ctrl.Recorder = c.recorder("resourcequota")
		return ctrl
	}},
	{"validatingadmissionpolicy-status", "validatingadmissionpolicy-status-controller", 5, func(c controllerContext, cl clients) controller {
		// The built-in types from berth's OpenAPI definitions, the others (custom resources)
		// from the server's discovery, as kube-controller-manager resolves them.
		schemas := validatingadmissionpolicystatus.LazySchemaResolver(func() resolver.SchemaResolver {
			return resolver.NewDefinitionsSchemaResolver(openapi.GetOpenAPIDefinitions, scheme.Scheme, apiextensionsscheme.Scheme).
				Combine(&resolver.ClientDiscoveryResolver{Discovery: cl.client.Discovery()})
		})
		mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cl.client.Discovery()))
		ctrl, err := validatingadmissionpolicystatus.NewController(c.informers.Admissionregistration().V1().ValidatingAdmissionPolicies(),
			cl.client.AdmissionregistrationV1(), &validatingpolicy.TypeChecker{SchemaResolver: schemas, RestMapper: mapper})
		if err != nil {
			return failed{err}
		}
		return ctrl
	}},
	{"root-ca-cert-publisher", "root-ca-cert-publisher", 1, func(c controllerContext, cl clients) controller {
		ctrl := rootcacertpublisher.NewPublisher(cl.client, c.informers.Core().V1().ConfigMaps(), c.informers.Core().V1().Namespaces(), c.rootCA)
		ctrl.Recorder = c.recorder("root-ca-cert-publisher")
		return ctrl
	}},
	{"csrsigning", "certificate-controller", 5, buildCSRSigning},
	{"csrapproving", "certificate-controller", 5, buildCSRApproving},
	{"csrcleaner", "certificate-controller", 1, buildCSRCleaner},
}

type controllerEntry struct {
	name, account string
	workers       int
	build         func(controllerContext, clients) controller
}

// failed is a controller that could not be built: its Run returns why, and its supervisor
// builds it again after a back-off.
type failed struct{ err error }

func (f failed) Run(context.Context, int) error { return f.err }

// startedInformers are the typed informers the other controllers have started, for the
// garbage collector: it reads their resources through them instead of a second watch (as
// kube-controller-manager's informer factory hands it the typed informer of a resource). It
// creates none: a resource no controller watches stays metadata-only, not a full cache.
type startedInformers struct {
	factory informers.SharedInformerFactory
}

func (s startedInformers) Informer(resource schema.GroupVersionResource, kind schema.GroupVersionKind) (cache.SharedIndexInformer, bool) {
	obj, err := scheme.Scheme.New(kind)
	if err != nil {
		return nil, false
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// With a done context this waits for nothing: it reports the started informers' types.
	if _, started := s.factory.WaitForCacheSyncWithContext(ctx).Synced[reflect.TypeOf(obj)]; !started {
		return nil, false
	}
	generic, err := s.factory.ForResource(resource)
	if err != nil {
		return nil, false
	}
	return generic.Informer(), true
}

// build builds the i-th controller with its credentials.
func (c controllerContext) build(i int) (controller, error) {
	cl, err := c.clientsFor(controllers[i].account)
	if err != nil {
		return nil, err
	}
	return controllers[i].build(c, cl), nil
}

// Restart back-off of a controller whose Run returned or panicked: one second doubling to a
// minute, reset by a run that lasted a minute. Variables, so that tests need not wait.
var (
	restartBackoff    = time.Second
	maxRestartBackoff = time.Minute
)

// Leader election timings, those of kube-controller-manager: a new leader takes over at most
// LeaseDuration after the old one stops renewing.
const (
	leaseDuration = 15 * time.Second
	renewDeadline = 10 * time.Second
	retryPeriod   = 2 * time.Second
)

// Options configure Run.
type Options struct {
	// LeaderElect runs the controllers only while this process holds the Lease, so that
	// several replicas can run with exactly one of them active.
	LeaderElect bool
	// LeaseName names the Lease; default "berth-controller-manager".
	LeaseName string
	// LeaseNamespace is the Lease's namespace; default "kube-system".
	LeaseNamespace string
	// Identity is this replica's name in the Lease; default "<hostname>_<random uuid>".
	Identity string
	// RootCAFile is the CA bundle published as kube-root-ca.crt in every namespace
	// (kube-controller-manager's --root-ca-file); default: the CA that config trusts.
	RootCAFile string
	// UseServiceAccountCredentials gives each controller the token of its own service account
	// in kube-system (created if missing, refreshed through TokenRequest), as
	// kube-controller-manager's --use-service-account-credentials does, so that each holds only
	// its controller role; otherwise every controller writes with the manager's credentials.
	UseServiceAccountCredentials bool
	// TerminatedPodGCThreshold is how many terminated pods may exist before pod GC deletes
	// the oldest (kube-controller-manager's --terminated-pod-gc-threshold); default 12500,
	// and 0 or less keeps them all.
	TerminatedPodGCThreshold *int
	// Controllers picks the controllers to run, as kube-controller-manager's --controllers:
	// "*" is all of them, "foo" adds foo and "-foo" removes it; empty means "*".
	Controllers []string
	// ClusterSigningCertFile and ClusterSigningKeyFile are the CA csrsigning signs with
	// (kube-controller-manager's --cluster-signing-cert-file and --cluster-signing-key-file);
	// without them csrsigning does nothing.
	ClusterSigningCertFile, ClusterSigningKeyFile string
	// ClusterSigningDuration is the longest certificate csrsigning issues
	// (--cluster-signing-duration); zero means a year.
	ClusterSigningDuration time.Duration
}

// enabled is the indices in controllers that names pick, or an error naming an unknown one.
func enabled(names []string) ([]int, error) {
	if len(names) == 0 {
		names = []string{"*"}
	}
	on := map[string]bool{}
	all := false
	for _, n := range names {
		name, off := strings.CutPrefix(n, "-")
		if name == "*" && !off {
			all = true
			continue
		}
		if !slices.ContainsFunc(controllers, func(c controllerEntry) bool { return c.name == name }) {
			return nil, fmt.Errorf("%q is not in the list of known controllers", n)
		}
		on[name] = !off
	}
	var picked []int
	for i, c := range controllers {
		if want, named := on[c.name]; want || (all && !named) {
			picked = append(picked, i)
		}
	}
	return picked, nil
}

func (o Options) withDefaults() (Options, error) {
	if o.LeaseName == "" {
		o.LeaseName = "berth-controller-manager"
	}
	if o.LeaseNamespace == "" {
		o.LeaseNamespace = metav1.NamespaceSystem
	}
	if o.Identity == "" {
		host, err := os.Hostname()
		if err != nil {
			return o, fmt.Errorf("choosing a leader election identity: %w", err)
		}
		// The uuid tells a restarted process from its predecessor on the same host.
		o.Identity = host + "_" + string(uuid.NewUUID())
	}
	return o, nil
}

// Run runs the controllers against the API server that config reaches and blocks until ctx
// is done. With opts.LeaderElect the controllers run only while this process holds the Lease;
// after losing it, Run stops them and campaigns again. It returns nil once ctx is done, or an
// error if it cannot start.
func Run(ctx context.Context, config *rest.Config, opts Options) error {
	opts, err := opts.withDefaults()
	if err != nil {
		return err
	}
	rootCA, err := rootCABundle(config, opts.RootCAFile)
	if err != nil {
		return err
	}
	config = clientConfig(config)
	cc, err := newControllerContext(config, opts.UseServiceAccountCredentials)
	if err != nil {
		return err
	}
	cc.rootCA = rootCA
	cc.terminatedPodGCThreshold = podgc.DefaultTerminatedPodThreshold
	if opts.TerminatedPodGCThreshold != nil {
		cc.terminatedPodGCThreshold = *opts.TerminatedPodGCThreshold
	}
	cc.signing = signingOptions{certFile: opts.ClusterSigningCertFile, keyFile: opts.ClusterSigningKeyFile, duration: opts.ClusterSigningDuration}
	if cc.enabled, err = enabled(opts.Controllers); err != nil {
		return err
	}
	if !opts.LeaderElect {
		runControllers(ctx, cc)
		return nil
	}

	lock, err := resourcelock.NewFromKubeconfig(resourcelock.LeasesResourceLock, opts.LeaseNamespace, opts.LeaseName,
		resourcelock.ResourceLockConfig{Identity: opts.Identity}, config, renewDeadline)
	if err != nil {
		return fmt.Errorf("creating the leader election lock: %w", err)
	}
	logger := klog.FromContext(ctx)
	for {
		if err := leadOnce(ctx, lock, cc); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
		logger.Info("Lost the controller manager lease, campaigning again", "lease", klog.KRef(opts.LeaseNamespace, opts.LeaseName))
	}
}

// rootCABundle is the CA bundle the root CA publisher publishes: file's certificates, or the
// CA config trusts (its CAData, else its CAFile), as kube-controller-manager chooses.
func rootCABundle(config *rest.Config, file string) ([]byte, error) {
	if file == "" {
		if len(config.CAData) > 0 || config.CAFile == "" {
			return config.CAData, nil
		}
		file = config.CAFile
	}
	data, err := os.ReadFile(file)
	if err == nil {
		_, err = certutil.ParseCertsPEM(data)
	}
	if err != nil {
		return nil, fmt.Errorf("error parsing root-ca-file at %s: %w", file, err)
	}
	return data, nil
}

// clientConfig is config for berth's own clients: protobuf, enough QPS for the bursts of
// calls that deleting a namespace makes, and no logged warnings, as kube-controller-manager
// (the endpoints controller writes the deprecated v1 Endpoints on purpose).
func clientConfig(config *rest.Config) *rest.Config {
	config = rest.CopyConfig(config)
	config.WarningHandlerWithContext = rest.NoWarnings{}
	config.ContentType = runtime.ContentTypeProtobuf
	config.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	if config.UserAgent == "" {
		config.UserAgent = "berth-controller-manager"
	}
	if config.QPS == 0 {
		config.QPS, config.Burst = 50, 100
	}
	return config
}

// newControllerContext builds the clients. Informers are built per run of the controllers,
// since a factory cannot be restarted once stopped.
func newControllerContext(config *rest.Config, serviceAccountCredentials bool) (controllerContext, error) {
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return controllerContext{}, fmt.Errorf("creating the API client: %w", err)
	}
	metadataClient, err := metadata.NewForConfig(config)
	if err != nil {
		return controllerContext{}, fmt.Errorf("creating the metadata client: %w", err)
	}
	var credentials clientbuilder.ControllerClientBuilder
	if serviceAccountCredentials {
		// The token must be the only credential: with the manager's client certificate
		// beside it, the API server would authenticate the certificate.
		credentials = clientbuilder.NewDynamicClientBuilder(rest.AnonymousClientConfig(config), client.CoreV1(), metav1.NamespaceSystem)
	}
	return controllerContext{client: client, metadata: metadataClient, discovery: client.Discovery(), credentials: credentials}, nil
}

// runControllers builds the controllers on fresh shared informers, runs them and blocks until
// ctx is done and every controller and informer goroutine has stopped.
func runControllers(ctx context.Context, cc controllerContext) {
	logger := klog.FromContext(ctx)
	// As kube-controller-manager's: no controller reads managedFields from a lister.
	cc.informers = informers.NewSharedInformerFactoryWithOptions(cc.client, 0, informers.WithTransform(managedfields.Trim))
	cc.metadataInformers = sharedmetadata.New(cc.metadata)
	defer cc.metadataInformers.Shutdown()
	cc.broadcaster = events.NewBroadcaster(&events.EventSinkImpl{Interface: cc.client.EventsV1()})
	cc.broadcaster.StartRecordingToSink(ctx.Done())
	defer cc.broadcaster.Shutdown()
	// Every controller is built before the factory starts, so that its informers start
	// together; one that could not be built is built again by its supervisor, whose Start
	// then starts the informers it added.
	built := make([]controller, len(controllers))
	for _, i := range cc.enabled {
		c := controllers[i]
		var err error
		if built[i], err = cc.build(i); err != nil {
			logger.Error(err, "Building a controller failed; retrying", "controller", c.name)
		}
	}
	cc.informers.Start(ctx.Done())
	defer cc.informers.Shutdown()

	var wg sync.WaitGroup
	for _, i := range cc.enabled {
		c := controllers[i]
		ctx := klog.NewContext(ctx, klog.LoggerWithName(logger, c.name+"-controller"))
		wg.Go(func() {
			superviseController(ctx, c.name, c.workers, built[i], func() (controller, error) {
				ctrl, err := cc.build(i)
				if err == nil {
					cc.informers.Start(ctx.Done())
				}
				return ctrl, err
			})
		})
	}
	logger.Info("Started controllers", "count", len(cc.enabled))
	wg.Wait()
}

// superviseController runs ctrl until ctx is done. A controller whose Run returns early, with
// an error or a panic, is one component down while the others go on (`berth up` runs them
// all in one process): it is built again (a stopped controller's queue is shut down for
// good) and run again after a back-off. The new one's event handlers join the started
// informers, which replay their caches to it.
func superviseController(ctx context.Context, name string, workers int, ctrl controller, rebuild func() (controller, error)) {
	logger := klog.FromContext(ctx)
	backoff := restartBackoff
	for {
		start := time.Now()
		err := panics.Call(ctx, recovery.Component(name), func() error {
			if ctrl == nil {
				var err error
				if ctrl, err = rebuild(); err != nil {
					return fmt.Errorf("building it: %w", err)
				}
			}
			return ctrl.Run(ctx, workers)
		})
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			err = errors.New("returned before it was told to stop")
		}
		if time.Since(start) > maxRestartBackoff {
			backoff = restartBackoff
		}
		logger.Error(err, "Controller stopped; restarting it", "controller", name, "after", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxRestartBackoff)
		ctrl = nil // a stopped controller's queue is shut down for good: build a new one
	}
}

// leadOnce campaigns for the Lease and runs the controllers while holding it. It returns
// when ctx is done or the Lease is lost, and only after the controllers have stopped, so
// that two terms never overlap in one process. Because the Lease is released only after the
// controllers stop (ReleaseOnCancel on a context this function cancels itself), a successor
// never overlaps with them either, and a clean shutdown hands over at once rather than after
// LeaseDuration.
func leadOnce(ctx context.Context, lock resourcelock.Interface, cc controllerContext) error {
	electCtx, stopElecting := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElecting()

	var (
		mu      sync.Mutex
		leading bool
		stopped = make(chan struct{}) // closed when the controllers have stopped
	)
	// Before the Lease is won, ctx ending simply ends the campaign.
	stopCampaign := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if !leading {
			stopElecting()
		}
	})
	defer stopCampaign()

	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   leaseDuration,
		RenewDeadline:   renewDeadline,
		RetryPeriod:     retryPeriod,
		ReleaseOnCancel: true,
		Name:            lock.Describe(),
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leaseCtx context.Context) {
				mu.Lock()
				if leaseCtx.Err() != nil || ctx.Err() != nil {
					mu.Unlock() // lost or told to stop before starting
					return
				}
				leading = true
				mu.Unlock()
				defer close(stopped)
				defer stopElecting() // release the Lease once the controllers are stopped

				runCtx, cancel := context.WithCancel(leaseCtx)
				defer cancel()
				stopWithCtx := context.AfterFunc(ctx, cancel)
				defer stopWithCtx()
				runControllers(runCtx, cc)
			},
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		return fmt.Errorf("creating the leader elector: %w", err)
	}
	elector.Run(electCtx)

	// Run has cancelled the lease context, so OnStartedLeading either has set leading or
	// will return without starting anything.
	mu.Lock()
	wasLeading := leading
	mu.Unlock()
	if wasLeading {
		<-stopped
	}
	return nil
}
