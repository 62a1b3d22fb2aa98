package serviceaccount

import (
	"context"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/warning"

	"github.com/berth-cluster/berth/pkg/auth/serviceaccount"
)

// objects is a rest.Getter over a few objects of one resource.
type objects struct {
	resource string
	byName   map[string]runtime.Object
}

func (o objects) Get(_ context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	if obj, ok := o.byName[name]; ok {
		return obj, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource(o.resource), name)
}

// recordingIssuer remembers what it was asked to sign.
type recordingIssuer struct{ got *serviceaccount.Token }

func (r *recordingIssuer) Issue(t serviceaccount.Token) (string, string, error) {
	r.got = &t
	return "signed", "jti", nil
}

type warnings []string

func (w *warnings) AddWarning(_, text string) { *w = append(*w, text) }

const apiAudience = "https://kubernetes.default.svc.cluster.local"

func newTestTokenREST(opts TokenOptions) (*TokenREST, *recordingIssuer) {
	meta := func(name, uid string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(uid)}
	}
	sas := objects{"serviceaccounts", map[string]runtime.Object{"robot": &corev1.ServiceAccount{ObjectMeta: meta("robot", "sa-uid")}}}
	pods := objects{"pods", map[string]runtime.Object{
		"web":    &corev1.Pod{ObjectMeta: meta("web", "pod-uid"), Spec: corev1.PodSpec{ServiceAccountName: "robot", NodeName: "n1"}},
		"orphan": &corev1.Pod{ObjectMeta: meta("orphan", "orphan-uid"), Spec: corev1.PodSpec{ServiceAccountName: "robot", NodeName: "gone"}},
		"other":  &corev1.Pod{ObjectMeta: meta("other", "other-uid"), Spec: corev1.PodSpec{ServiceAccountName: "default"}},
	}}
	secrets := objects{"secrets", map[string]runtime.Object{"s": &corev1.Secret{ObjectMeta: meta("s", "secret-uid")}}}
	nodes := objects{"nodes", map[string]runtime.Object{"n1": &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "node-uid"}}}}
	iss := &recordingIssuer{}
	if opts.Audiences == nil {
		opts.Audiences = []string{apiAudience}
	}
	return NewTokenREST(sas, pods, secrets, nodes, iss, opts), iss
}

func request(mutate func(*authenticationv1.TokenRequest)) *authenticationv1.TokenRequest {
	tr := &authenticationv1.TokenRequest{}
	if mutate != nil {
		mutate(tr)
	}
	return tr
}

func seconds(s int64) *int64 { return &s }

// TestTokenRequestErrors: the errors kube-apiserver answers a TokenRequest with.
func TestTokenRequestErrors(t *testing.T) {
	tests := []struct {
		name    string
		sa      string
		req     *authenticationv1.TokenRequest
		check   func(error) bool
		wantMsg string
	}{
		{name: "no such service account", sa: "nobody", req: request(nil), check: apierrors.IsNotFound,
			wantMsg: `serviceaccounts "nobody" not found`},
		{name: "name differs", sa: "robot", req: request(func(tr *authenticationv1.TokenRequest) { tr.Name = "other" }), check: apierrors.IsInvalid,
			wantMsg: `TokenRequest.authentication.k8s.io "robot" is invalid: metadata.name: Invalid value: "other": must match the service account name if specified`},
		{name: "namespace differs", sa: "robot", req: request(func(tr *authenticationv1.TokenRequest) { tr.Namespace = "other" }), check: apierrors.IsInvalid,
			wantMsg: `TokenRequest.authentication.k8s.io "robot" is invalid: metadata.namespace: Invalid value: "other": must match the service account namespace if specified`},
		{name: "service account UID differs", sa: "robot", req: request(func(tr *authenticationv1.TokenRequest) { tr.UID = "old" }), check: apierrors.IsConflict,
			wantMsg: `Operation cannot be fulfilled on TokenRequest.authentication.k8s.io "robot": the UID in the token request (old) does not match the UID of the service account (sa-uid)`},
		{name: "too short", sa: "robot", req: request(func(tr *authenticationv1.TokenRequest) { tr.Spec.ExpirationSeconds = seconds(599) }), check: apierrors.IsInvalid,
			wantMsg: `TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes`},
		{name: "too long", sa: "robot", req: request(func(tr *authenticationv1.TokenRequest) { tr.Spec.ExpirationSeconds = seconds(1<<32 + 1) }), check: apierrors.IsInvalid,
			wantMsg: `TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 4294967297: may not specify a duration larger than 2^32 seconds`},
		{name: "attestations without a webhook", sa: "robot", req: request(func(tr *authenticationv1.TokenRequest) {
			tr.Spec.Attestations = map[string]authenticationv1.AttestationValue{"admissionReviewAPIGroups": {"*"}}
		}), check: apierrors.IsInvalid,
			wantMsg: `TokenRequest.authentication.k8s.io "" is invalid: spec.attestations: Invalid value: {"admissionReviewAPIGroups":["*"]}: attestations may only be specified with a webhook bound object reference`},
		{name: "unknown bound kind", sa: "robot", req: request(func(tr *authenticationv1.TokenRequest) {
			tr.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Deployment", APIVersion: "apps/v1", Name: "d"}
		}), check: apierrors.IsBadRequest, wantMsg: `cannot bind token to object of type apps/v1, Kind=Deployment`},
		{name: "webhook without the feature", sa: "robot", req: request(func(tr *authenticationv1.TokenRequest) {
			tr.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "ValidatingWebhookConfiguration", APIVersion: "admissionregistration.k8s.io/v1", Name: "w"}
			tr.Spec.Audiences = []string{"hook"}
			tr.Spec.Attestations = map[string]authenticationv1.AttestationValue{"admissionReviewAPIGroups": {"apps"}}
		}), check: apierrors.IsBadRequest,
			wantMsg: `cannot bind token to object of type admissionregistration.k8s.io/v1, Kind=ValidatingWebhookConfiguration (feature gate APIServerWebhookAuthenticationToken is disabled)`},
		{name: "bound pod missing", sa: "robot", req: request(func(tr *authenticationv1.TokenRequest) {
			tr.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "nope"}
		}), check: apierrors.IsNotFound, wantMsg: `pods "nope" not found`},
		{name: "pod of another service account", sa: "robot", req: request(func(tr *authenticationv1.TokenRequest) {
			tr.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "other"}
		}), check: apierrors.IsBadRequest, wantMsg: `cannot bind token for serviceaccount "robot" to pod running with different serviceaccount name.`},
		{name: "bound pod UID differs", sa: "robot", req: request(func(tr *authenticationv1.TokenRequest) {
			tr.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "web", UID: "old"}
		}), check: apierrors.IsConflict,
			wantMsg: `Operation cannot be fulfilled on Pod "web": the UID in the bound object reference (old) does not match the UID in record. The object might have been deleted and then recreated`},
		{name: "bound secret UID differs", sa: "robot", req: request(func(tr *authenticationv1.TokenRequest) {
			tr.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: "s", UID: "old"}
		}), check: apierrors.IsConflict,
			wantMsg: `Operation cannot be fulfilled on Secret "s": the UID in the bound object reference (old) does not match the UID in record. The object might have been deleted and then recreated`},
		{name: "bound node missing", sa: "robot", req: request(func(tr *authenticationv1.TokenRequest) {
			tr.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Node", APIVersion: "v1", Name: "n9"}
		}), check: apierrors.IsNotFound, wantMsg: `nodes "n9" not found`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, iss := newTestTokenREST(TokenOptions{})
			ctx := genericapirequest.WithNamespace(context.Background(), "ns")
			_, err := r.Create(ctx, tc.sa, tc.req, nil, nil)
			if err == nil || !tc.check(err) || err.Error() != tc.wantMsg {
				t.Fatalf("got %v\nwant %q", err, tc.wantMsg)
			}
			if iss.got != nil {
				t.Error("a token was issued")
			}
		})
	}
}

// TestTokenRequest: defaults, the bound objects, the cap and the extension.
func TestTokenRequest(t *testing.T) {
	pod := func(tr *authenticationv1.TokenRequest) {
		tr.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "web", UID: "pod-uid"}
	}
	tests := []struct {
		name                  string
		opts                  TokenOptions
		req                   *authenticationv1.TokenRequest
		wantExp, wantWarn     int64
		wantStatusExp         int64
		wantAuds              []string
		wantPod, wantNode     string
		wantSecret, wantWarns string
	}{
		{name: "defaults", req: request(nil), wantExp: 3600, wantStatusExp: 3600, wantAuds: []string{apiAudience}},
		{name: "audiences asked for", req: request(func(tr *authenticationv1.TokenRequest) { tr.Spec.Audiences = []string{"vault"} }),
			wantExp: 3600, wantStatusExp: 3600, wantAuds: []string{"vault"}},
		{name: "pod with its node", req: request(pod), wantExp: 3600, wantStatusExp: 3600, wantAuds: []string{apiAudience}, wantPod: "web", wantNode: "n1"},
		{name: "pod whose node is gone", req: request(func(tr *authenticationv1.TokenRequest) {
			tr.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "orphan"}
		}), wantExp: 3600, wantStatusExp: 3600, wantAuds: []string{apiAudience}, wantPod: "orphan", wantNode: "gone"},
		{name: "secret", req: request(func(tr *authenticationv1.TokenRequest) {
			tr.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: "s"}
		}), wantExp: 3600, wantStatusExp: 3600, wantAuds: []string{apiAudience}, wantSecret: "s"},
		{name: "node", req: request(func(tr *authenticationv1.TokenRequest) {
			tr.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Node", APIVersion: "v1", Name: "n1"}
		}), wantExp: 3600, wantStatusExp: 3600, wantAuds: []string{apiAudience}, wantNode: "n1"},
		{name: "a pod's 3607 s token is extended", opts: TokenOptions{ExtendExpiration: true, MaxExpiration: 2 * time.Hour},
			req:     request(func(tr *authenticationv1.TokenRequest) { pod(tr); tr.Spec.ExpirationSeconds = seconds(3607) }),
			wantExp: serviceaccount.ExtendedExpirationSeconds, wantWarn: 3607, wantStatusExp: 3607, wantAuds: []string{apiAudience}, wantPod: "web", wantNode: "n1"},
		{name: "not for other audiences", opts: TokenOptions{ExtendExpiration: true},
			req: request(func(tr *authenticationv1.TokenRequest) {
				pod(tr)
				tr.Spec.ExpirationSeconds = seconds(3607)
				tr.Spec.Audiences = []string{"vault"}
			}),
			wantExp: 3607, wantStatusExp: 3607, wantAuds: []string{"vault"}, wantPod: "web", wantNode: "n1"},
		{name: "not without a pod", opts: TokenOptions{ExtendExpiration: true},
			req:     request(func(tr *authenticationv1.TokenRequest) { tr.Spec.ExpirationSeconds = seconds(3607) }),
			wantExp: 3607, wantStatusExp: 3607, wantAuds: []string{apiAudience}},
		{name: "not when turned off",
			req:     request(func(tr *authenticationv1.TokenRequest) { pod(tr); tr.Spec.ExpirationSeconds = seconds(3607) }),
			wantExp: 3607, wantStatusExp: 3607, wantAuds: []string{apiAudience}, wantPod: "web", wantNode: "n1"},
		{name: "capped", opts: TokenOptions{MaxExpiration: 2 * time.Hour},
			req:     request(func(tr *authenticationv1.TokenRequest) { tr.Spec.ExpirationSeconds = seconds(86400) }),
			wantExp: 7200, wantStatusExp: 7200, wantAuds: []string{apiAudience}, wantWarns: "requested expiration of 86400 seconds shortened to 7200 seconds"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, iss := newTestTokenREST(tc.opts)
			var w warnings
			ctx := warning.WithWarningRecorder(genericapirequest.WithNamespace(context.Background(), "ns"), &w)
			before := time.Now()
			obj, err := r.Create(ctx, "robot", tc.req, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			out := obj.(*authenticationv1.TokenRequest)
			got := iss.got
			if got.ExpirationSeconds != tc.wantExp || got.WarnAfterSeconds != tc.wantWarn {
				t.Errorf("issued for %d s, warn after %d s; want %d, %d", got.ExpirationSeconds, got.WarnAfterSeconds, tc.wantExp, tc.wantWarn)
			}
			if len(got.Audiences) != len(tc.wantAuds) || got.Audiences[0] != tc.wantAuds[0] {
				t.Errorf("audiences %v, want %v", got.Audiences, tc.wantAuds)
			}
			name := func(m interface{ GetName() string }, ok bool) string {
				if !ok {
					return ""
				}
				return m.GetName()
			}
			if p, n, s := name(got.Pod, got.Pod != nil), name(got.Node, got.Node != nil), name(got.Secret, got.Secret != nil); p != tc.wantPod || n != tc.wantNode || s != tc.wantSecret {
				t.Errorf("bound to pod %q node %q secret %q", p, n, s)
			}
			if out.Status.Token != "signed" || out.Name != "robot" || out.Namespace != "ns" || out.UID != "sa-uid" {
				t.Errorf("returned %+v", out)
			}
			exp := out.Status.ExpirationTimestamp.Time
			if d := exp.Sub(before); d < time.Duration(tc.wantStatusExp-1)*time.Second || d > time.Duration(tc.wantStatusExp+1)*time.Second {
				t.Errorf("expirationTimestamp %v after the request, want %d s", d, tc.wantStatusExp)
			}
			if *out.Spec.ExpirationSeconds != tc.wantStatusExp {
				t.Errorf("spec.expirationSeconds %d", *out.Spec.ExpirationSeconds)
			}
			if tc.wantWarns != "" && (len(w) != 1 || w[0] != tc.wantWarns) {
				t.Errorf("warnings %q, want %q", w, tc.wantWarns)
			}
		})
	}
}
