package controllers

import (
	"context"
	"fmt"
	"time"

	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/controllers/certificates/csrapproving"
	"github.com/berth-cluster/berth/pkg/controllers/certificates/csrcleaner"
	"github.com/berth-cluster/berth/pkg/controllers/certificates/csrsigning"
)

// signingOptions are kube-controller-manager's --cluster-signing-* flags.
type signingOptions struct {
	certFile, keyFile string
	duration          time.Duration
}

// The certificate controllers, as kube-controller-manager's: all three write as the
// certificate-controller service account.
func buildCSRSigning(c controllerContext, cl clients) controller {
	if c.signing.certFile == "" || c.signing.keyFile == "" {
		return disabled{"no --cluster-signing-cert-file and --cluster-signing-key-file were given"}
	}
	ca, err := csrsigning.LoadCA(c.signing.certFile, c.signing.keyFile)
	if err != nil {
		return failed{fmt.Errorf("loading the cluster signing CA: %w", err)}
	}
	ttl := c.signing.duration
	if ttl <= 0 {
		ttl = csrsigning.DefaultDuration
	}
	ctrl := csrsigning.NewController(cl.client, c.informers.Certificates().V1().CertificateSigningRequests(), ca, ttl)
	ctrl.Recorder = c.recorder("csrsigning")
	return ctrl
}

func buildCSRApproving(c controllerContext, cl clients) controller {
	ctrl := csrapproving.NewController(cl.client, c.informers.Certificates().V1().CertificateSigningRequests())
	ctrl.Recorder = c.recorder("csrapproving")
	return ctrl
}

func buildCSRCleaner(c controllerContext, cl clients) controller {
	ctrl := csrcleaner.NewController(cl.client, c.informers.Certificates().V1().CertificateSigningRequests())
	ctrl.Recorder = c.recorder("csrcleaner")
	return ctrl
}

// disabled is a controller that has nothing to do in this configuration (csrsigning without
// a CA, as kube-controller-manager skips it): it says why once and waits, so that its
// supervisor does not restart it.
type disabled struct{ why string }

func (d disabled) Run(ctx context.Context, _ int) error {
	klog.FromContext(ctx).Info("Controller disabled", "reason", d.why)
	<-ctx.Done()
	return nil
}
