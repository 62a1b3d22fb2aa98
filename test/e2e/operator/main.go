// Command operator is the e2e tests' operator, written as a kubebuilder project writes one,
// with sigs.k8s.io/controller-runtime: a manager (cache, client, leader election, health
// probes) runs a reconciler of the custom resource Greeting and a webhook server that
// defaults and validates it.
//
// A Greeting (group --group, version v1) asks for a greeting:
//
//	spec:   {name: Ada, greeting: Ahoy}
//	status: {message: "Ahoy, Ada!", configMap: ada-greeting, observedGeneration: 1}
//
// The reconciler keeps a ConfigMap <name>-greeting holding the message, controlled by the
// Greeting through an owner reference (so that deleting the Greeting garbage-collects it),
// and writes the status through the status subresource. The mutating webhook sets an empty
// spec.greeting to --default-greeting; the validating webhook requires spec.name and keeps it
// immutable. With --mode=webhook the program serves the webhooks alone (no reconciler, no API
// permissions needed), as a Helm chart's webhook Deployment.
//
// The webhook server reads tls.crt and tls.key from --cert-dir (a kubernetes.io/tls Secret
// mounted there) and reloads them when they change; /readyz answers once it serves.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// fallbackGreeting is what the reconciler says for a Greeting the mutating webhook did not
// default (created while the webhook was ignored).
const fallbackGreeting = "Hello"

// options are the program's flags.
type options struct {
	group, mode, defaultGreeting, certDir, probeAddr string
	webhookPort                                      int
	leaderElect                                      bool
}

func main() {
	var o options
	flag.StringVar(&o.group, "group", "e2e.berth.dev", "the API group of the Greeting resource (version v1)")
	flag.StringVar(&o.mode, "mode", "operator", "operator (reconciler and webhooks) or webhook (webhooks alone)")
	flag.StringVar(&o.defaultGreeting, "default-greeting", "Hello", "what the mutating webhook sets an empty spec.greeting to")
	flag.StringVar(&o.certDir, "cert-dir", "/tmp/k8s-webhook-server/serving-certs", "the directory of the webhook server's tls.crt and tls.key")
	flag.IntVar(&o.webhookPort, "webhook-port", webhook.DefaultPort, "the webhook server's port")
	flag.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "the address of /healthz and /readyz")
	flag.BoolVar(&o.leaderElect, "leader-elect", false, "elect a leader (a Lease in the pod's namespace) before reconciling")
	klog.InitFlags(nil)
	flag.Parse()
	ctrl.SetLogger(klog.NewKlogr())
	if err := run(o); err != nil {
		klog.ErrorS(err, "operator failed")
		os.Exit(1)
	}
}

func run(o options) error {
	if o.mode != "operator" && o.mode != "webhook" {
		return fmt.Errorf("--mode=%q: want operator or webhook", o.mode)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	gv := schema.GroupVersion{Group: o.group, Version: "v1"}
	scheme.AddKnownTypes(gv, &Greeting{}, &GreetingList{})
	metav1.AddToGroupVersion(scheme, gv)

	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:        o.probeAddr,
		LeaderElection:                o.leaderElect && o.mode == "operator",
		LeaderElectionID:              "greeting-operator." + o.group,
		LeaderElectionReleaseOnCancel: true,
		WebhookServer:                 webhook.NewServer(webhook.Options{Port: o.webhookPort, CertDir: o.certDir}),
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	if o.mode == "operator" {
		r := &reconciler{Client: mgr.GetClient(), scheme: mgr.GetScheme()}
		if err := ctrl.NewControllerManagedBy(mgr).For(&Greeting{}).Owns(&corev1.ConfigMap{}).Named("greeting").Complete(r); err != nil {
			return fmt.Errorf("creating the controller: %w", err)
		}
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &Greeting{}).
		WithDefaulter(&defaulter{greeting: o.defaultGreeting}).
		WithValidator(validator{}).
		Complete(); err != nil {
		return fmt.Errorf("creating the webhooks: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return err
	}
	klog.InfoS("Starting the manager", "group", o.group, "mode", o.mode, "defaultGreeting", o.defaultGreeting)
	return mgr.Start(ctrl.SetupSignalHandler())
}

// reconciler keeps each Greeting's ConfigMap and status.
type reconciler struct {
	client.Client
	scheme *runtime.Scheme
}

func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var g Greeting
	if err := r.Get(ctx, req.NamespacedName, &g); err != nil {
		// Deleted: the garbage collector removes its ConfigMap.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !g.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	greeting := g.Spec.Greeting
	if greeting == "" {
		greeting = fallbackGreeting
	}
	message := fmt.Sprintf("%s, %s!", greeting, g.Spec.Name)

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: g.Name + "-greeting", Namespace: g.Namespace}}
	op, err := controllerutil.CreateOrUpdate(ctx, r.Client, cm, func() error {
		if cm.Labels == nil {
			cm.Labels = map[string]string{}
		}
		cm.Labels["app.kubernetes.io/managed-by"] = "greeting-operator"
		cm.Data = map[string]string{"message": message}
		return controllerutil.SetControllerReference(&g, cm, r.scheme)
	})
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("the ConfigMap of %s: %w", req.NamespacedName, err)
	}
	if op != controllerutil.OperationResultNone {
		ctrl.LoggerFrom(ctx).Info("ConfigMap "+string(op), "configMap", cm.Name, "message", message)
	}

	want := GreetingStatus{Message: message, ConfigMap: cm.Name, ObservedGeneration: g.Generation}
	if g.Status == want {
		return ctrl.Result{}, nil
	}
	g.Status = want
	// A conflict (the Greeting changed since the cache saw it) is retried with back-off, and
	// the change brings another reconcile anyway.
	if err := r.Status().Update(ctx, &g); err != nil {
		return ctrl.Result{}, fmt.Errorf("the status of %s: %w", req.NamespacedName, err)
	}
	return ctrl.Result{}, nil
}

// defaulter is the mutating webhook: it sets an empty spec.greeting.
type defaulter struct{ greeting string }

func (d *defaulter) Default(_ context.Context, g *Greeting) error {
	if g.Spec.Greeting == "" {
		g.Spec.Greeting = d.greeting
	}
	return nil
}

// validator is the validating webhook: spec.name is required and immutable.
type validator struct{}

func (validator) ValidateCreate(_ context.Context, g *Greeting) (admission.Warnings, error) {
	return nil, validate(g)
}

func (validator) ValidateUpdate(_ context.Context, old, g *Greeting) (admission.Warnings, error) {
	if old.Spec.Name != g.Spec.Name {
		return nil, errors.New(field.Invalid(field.NewPath("spec", "name"), g.Spec.Name, "field is immutable").Error())
	}
	return nil, validate(g)
}

func (validator) ValidateDelete(context.Context, *Greeting) (admission.Warnings, error) {
	return nil, nil
}

func validate(g *Greeting) error {
	if g.Spec.Name == "" {
		return errors.New(field.Required(field.NewPath("spec", "name"), "a Greeting must name whom it greets").Error())
	}
	return nil
}

// Greeting is the custom resource, as controller-gen would have it.
type Greeting struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GreetingSpec   `json:"spec,omitempty"`
	Status GreetingStatus `json:"status,omitempty"`
}

// GreetingSpec is whom to greet, and how.
type GreetingSpec struct {
	Name     string `json:"name,omitempty"`
	Greeting string `json:"greeting,omitempty"`
}

// GreetingStatus is what the reconciler made of the spec.
type GreetingStatus struct {
	Message            string `json:"message,omitempty"`
	ConfigMap          string `json:"configMap,omitempty"`
	ObservedGeneration int64  `json:"observedGeneration,omitempty"`
}

// GreetingList is a list of Greetings.
type GreetingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Greeting `json:"items"`
}

func (in *Greeting) DeepCopyInto(out *Greeting) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
}

func (in *Greeting) DeepCopy() *Greeting {
	if in == nil {
		return nil
	}
	out := new(Greeting)
	in.DeepCopyInto(out)
	return out
}

func (in *Greeting) DeepCopyObject() runtime.Object { return in.DeepCopy() }

func (in *GreetingList) DeepCopyObject() runtime.Object {
	if in == nil {
		return nil
	}
	out := new(GreetingList)
	*out = *in
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]Greeting, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
	return out
}
