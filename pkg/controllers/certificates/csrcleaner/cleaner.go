// Package csrcleaner is berth's CSR cleaner (kube-controller-manager's csrcleaner): it
// deletes CertificateSigningRequests that have served their purpose or been left behind, so
// that they do not pile up:
//
//   - issued, an hour after approval, or once the certificate has expired;
//   - denied or failed, an hour after that;
//   - approved but never issued, a day after approval;
//   - pending (no condition), a day after creation.
//
// Where upstream lists every CSR each hour, this one looks at a CSR when it changes and again
// at its next deadline.
package csrcleaner

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certinformers "k8s.io/client-go/informers/certificates/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/controllers/certificates"
)

// Name is the controller's name in --controllers, logs and metrics.
const Name = "csrcleaner"

// How long CSRs are kept, as upstream's.
const (
	approvedExpiration = time.Hour
	deniedExpiration   = time.Hour
	pendingExpiration  = 24 * time.Hour
)

// NewController returns the cleaner.
func NewController(client kubernetes.Interface, informer certinformers.CertificateSigningRequestInformer) *certificates.Controller {
	c := &cleaner{client: client, clock: clock.RealClock{}}
	return certificates.New(Name, informer, c.handle)
}

type cleaner struct {
	client kubernetes.Interface
	clock  clock.PassiveClock
}

// decision is the plan for one CSR: delete it now (and why), or look again after recheck
// (zero: nothing will make it due).
type decision struct {
	delete  bool
	reason  string
	recheck time.Duration
}

// decide plans csr's cleanup at now. It does no I/O.
func decide(csr *certificatesv1.CertificateSigningRequest, now time.Time) decision {
	issued := len(csr.Status.Certificate) > 0
	var deadlines []time.Time
	due := func(t metav1.Time, d time.Duration, reason string) *decision {
		if t.IsZero() {
			return nil
		}
		at := t.Add(d)
		if now.After(at) {
			return &decision{delete: true, reason: reason}
		}
		deadlines = append(deadlines, at)
		return nil
	}
	for _, c := range csr.Status.Conditions {
		var d *decision
		switch c.Type {
		case certificatesv1.CertificateApproved:
			if issued {
				d = due(c.LastUpdateTime, approvedExpiration, "issued and approved more than an hour ago")
			} else {
				d = due(c.LastUpdateTime, pendingExpiration, "approved but not issued for more than a day")
			}
		case certificatesv1.CertificateDenied:
			d = due(c.LastUpdateTime, deniedExpiration, "denied more than an hour ago")
		case certificatesv1.CertificateFailed:
			d = due(c.LastUpdateTime, deniedExpiration, "failed more than an hour ago")
		}
		if d != nil {
			return *d
		}
	}
	if len(csr.Status.Conditions) == 0 {
		if d := due(csr.CreationTimestamp, pendingExpiration, "pending for more than a day"); d != nil {
			return *d
		}
	}
	if issued && certificates.HasTrueCondition(csr, certificatesv1.CertificateApproved) {
		if notAfter, ok := certificateNotAfter(csr.Status.Certificate); ok {
			if now.After(notAfter) {
				return decision{delete: true, reason: "its certificate has expired"}
			}
			deadlines = append(deadlines, notAfter)
		}
	}
	var next time.Duration
	for _, at := range deadlines {
		// A second past the deadline, since "due" is strictly after it.
		if d := at.Sub(now) + time.Second; next == 0 || d < next {
			next = d
		}
	}
	return decision{recheck: next}
}

// certificateNotAfter is the expiry of the first certificate of a PEM chain.
func certificateNotAfter(data []byte) (time.Time, bool) {
	block, _ := pem.Decode(data)
	if block == nil {
		return time.Time{}, false
	}
	certs, err := x509.ParseCertificates(block.Bytes)
	if err != nil || len(certs) == 0 {
		return time.Time{}, false
	}
	return certs[0].NotAfter, true
}

func (c *cleaner) handle(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) (time.Duration, error) {
	d := decide(csr, c.clock.Now())
	if !d.delete {
		return d.recheck, nil
	}
	klog.FromContext(ctx).Info("Cleaning up a certificate request", "csr", csr.Name, "reason", d.reason)
	err := c.client.CertificatesV1().CertificateSigningRequests().Delete(ctx, csr.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &csr.UID}, // not a new CSR of the same name
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return 0, fmt.Errorf("unable to delete CSR %q: %w", csr.Name, err)
	}
	return 0, nil
}
