// Package certificates holds what kube-controller-manager's certificate controllers share:
// a controller over CertificateSigningRequests (a queue of CSR names fed by the shared
// informer, each synced by a handler on a private copy) and the rules for reading a CSR (its
// approval, its parsed request, the shape of a kubelet's client and serving requests).
//
// The controllers stand at the end of a CSR's flow:
//
//	created ─► csrapproving (a node's client CSRs, per SubjectAccessReview) ─► approved
//	approved ─► csrsigning (signs with the cluster CA) ─► issued
//	any state ─► csrcleaner (deletes it once old enough) ─► gone
package certificates

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"golang.org/x/time/rate"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	certinformers "k8s.io/client-go/informers/certificates/v1"
	certlisters "k8s.io/client-go/listers/certificates/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/controllers/recovery"
)

// Handler reconciles one CSR, a copy it may change. A positive requeueAfter looks at the CSR
// again then (the cleaner's deadlines).
type Handler func(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) (requeueAfter time.Duration, err error)

// Controller runs a Handler over every CSR, on each add and update.
type Controller struct {
	name   string
	csrs   certlisters.CertificateSigningRequestLister
	synced cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
	handle Handler

	// Recorder, when set, gets a FailedSync event on a CSR whose sync panicked.
	Recorder events.EventRecorder
}

// New returns the controller named name (its queue's and its logs'), fed by informer.
func New(name string, informer certinformers.CertificateSigningRequestInformer, handle Handler) *Controller {
	c := &Controller{
		name:   name,
		csrs:   informer.Lister(),
		handle: handle,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			// As upstream: retries of a failing CSR from 200 ms up to 1000 s.
			workqueue.NewTypedMaxOfRateLimiter(
				workqueue.NewTypedItemExponentialFailureRateLimiter[string](200*time.Millisecond, 1000*time.Second),
				&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
			),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: name}),
	}
	enqueue := func(obj any) {
		if csr, ok := obj.(*certificatesv1.CertificateSigningRequest); ok {
			c.queue.Add(csr.Name)
		}
	}
	registration, _ := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, cur any) { enqueue(cur) },
	})
	c.synced = registration.HasSynced
	return c
}

// Run starts workers and blocks until ctx is done, then waits for them to stop.
func (c *Controller) Run(ctx context.Context, workers int) error {
	w := &recovery.Worker[string]{
		Name:  c.name,
		Queue: c.queue,
		Sync:  c.sync,
		Reference: func(name string) *corev1.ObjectReference {
			return &corev1.ObjectReference{APIVersion: "certificates.k8s.io/v1", Kind: "CertificateSigningRequest", Name: name}
		},
		Recorder:       c.Recorder,
		KeyName:        "csr",
		FailureMessage: "Failed to sync certificate request, will retry",
		Expected: func(err error) (string, bool) {
			var ignorable *IgnorableError
			if errors.As(err, &ignorable) || apierrors.IsConflict(err) {
				return "Certificate request not handled yet: " + err.Error(), true
			}
			return "", false
		},
	}
	return w.Run(ctx, workers, c.synced)
}

func (c *Controller) sync(ctx context.Context, name string) error {
	csr, err := c.csrs.Get(name)
	if apierrors.IsNotFound(err) {
		klog.FromContext(ctx).V(3).Info("CSR has been deleted", "csr", name)
		return nil
	}
	if err != nil {
		return err
	}
	after, err := c.handle(ctx, csr.DeepCopy()) // never change the cache's object
	if err == nil && after > 0 {
		c.queue.AddAfter(name, after)
	}
	return err
}

// IgnorableError is a failure that is expected for a while (a review not yet allowing an
// approval): retried with back-off, logged only at V(4).
type IgnorableError struct{ msg string }

func (e *IgnorableError) Error() string { return e.msg }

// Ignorable returns an IgnorableError.
func Ignorable(format string, args ...any) error {
	return &IgnorableError{fmt.Sprintf(format, args...)}
}

// Approved reports whether the CSR is approved and not denied.
func Approved(csr *certificatesv1.CertificateSigningRequest) bool {
	approved, denied := ApprovalState(csr)
	return approved && !denied
}

// ApprovalState reports whether the CSR has an Approved and a Denied condition.
func ApprovalState(csr *certificatesv1.CertificateSigningRequest) (approved, denied bool) {
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateApproved:
			approved = true
		case certificatesv1.CertificateDenied:
			denied = true
		}
	}
	return approved, denied
}

// HasTrueCondition reports whether the CSR has a condition of type t that is true (or, as
// written by old clients, has no status).
func HasTrueCondition(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == t && (c.Status == "" || c.Status == corev1.ConditionTrue) {
			return true
		}
	}
	return false
}

// ParseCSR decodes the CSR's PEM request.
func ParseCSR(pemBytes []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("PEM block type must be CERTIFICATE REQUEST")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing the certificate request: %w", err)
	}
	return req, nil
}

// Usages is the set of a CSR's usages.
func Usages(usages []certificatesv1.KeyUsage) sets.Set[string] {
	s := sets.New[string]()
	for _, u := range usages {
		s.Insert(string(u))
	}
	return s
}

// The usages a kubelet asks for: with an RSA key, key encipherment too.
var (
	kubeletClientUsages       = sets.New(string(certificatesv1.UsageDigitalSignature), string(certificatesv1.UsageKeyEncipherment), string(certificatesv1.UsageClientAuth))
	kubeletClientUsagesNoRSA  = sets.New(string(certificatesv1.UsageDigitalSignature), string(certificatesv1.UsageClientAuth))
	kubeletServingUsages      = sets.New(string(certificatesv1.UsageDigitalSignature), string(certificatesv1.UsageKeyEncipherment), string(certificatesv1.UsageServerAuth))
	kubeletServingUsagesNoRSA = sets.New(string(certificatesv1.UsageDigitalSignature), string(certificatesv1.UsageServerAuth))
)

// ValidateKubeletClientCSR checks that a request is a kubelet's client certificate request:
// system:node:<name> in system:nodes, no subject alternative names, client usages only.
func ValidateKubeletClientCSR(req *x509.CertificateRequest, usages sets.Set[string]) error {
	if !reflect.DeepEqual([]string{"system:nodes"}, req.Subject.Organization) {
		return errors.New("subject organization is not system:nodes")
	}
	switch {
	case len(req.DNSNames) > 0:
		return errors.New("DNS subjectAltNames are not allowed")
	case len(req.EmailAddresses) > 0:
		return errors.New("Email subjectAltNames are not allowed")
	case len(req.IPAddresses) > 0:
		return errors.New("IP subjectAltNames are not allowed")
	case len(req.URIs) > 0:
		return errors.New("URI subjectAltNames are not allowed")
	}
	if !strings.HasPrefix(req.Subject.CommonName, "system:node:") {
		return errors.New("subject common name does not begin with system:node:")
	}
	if !kubeletClientUsages.Equal(usages) && !kubeletClientUsagesNoRSA.Equal(usages) {
		return fmt.Errorf("usages did not match %v", sets.List(kubeletClientUsages))
	}
	return nil
}

// ValidateKubeletServingCSR checks that a request is a kubelet's serving certificate
// request: system:node:<name> in system:nodes, DNS or IP names only, server usages only.
func ValidateKubeletServingCSR(req *x509.CertificateRequest, usages sets.Set[string]) error {
	if !reflect.DeepEqual([]string{"system:nodes"}, req.Subject.Organization) {
		return errors.New("subject organization is not system:nodes")
	}
	switch {
	case len(req.DNSNames) == 0 && len(req.IPAddresses) == 0:
		return errors.New("DNS or IP subjectAltName is required")
	case len(req.EmailAddresses) > 0:
		return errors.New("Email subjectAltNames are not allowed")
	case len(req.URIs) > 0:
		return errors.New("URI subjectAltNames are not allowed")
	}
	if !kubeletServingUsages.Equal(usages) && !kubeletServingUsagesNoRSA.Equal(usages) {
		return fmt.Errorf("usages did not match %v", sets.List(kubeletServingUsages))
	}
	if !strings.HasPrefix(req.Subject.CommonName, "system:node:") {
		return errors.New("subject common name does not begin with system:node:")
	}
	return nil
}
