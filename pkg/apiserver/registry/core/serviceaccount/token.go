package serviceaccount

import (
	"context"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/audit"
	apiserverserviceaccount "k8s.io/apiserver/pkg/authentication/serviceaccount"
	authenticationtokenjwt "k8s.io/apiserver/pkg/authentication/token/jwt"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/auth/serviceaccount"
)

// defaultExpirationSeconds is authentication.k8s.io/v1's default for spec.expirationSeconds.
const defaultExpirationSeconds = 60 * 60

// TokenIssuer signs a token.
type TokenIssuer interface {
	Issue(serviceaccount.Token) (token, jti string, err error)
}

// TokenOptions are the API server's token settings.
type TokenOptions struct {
	// Audiences are the API audiences, the default of spec.audiences.
	Audiences []string
	// MaxExpiration caps a token's lifetime (--service-account-max-token-expiration); 0 is no cap.
	MaxExpiration time.Duration
	// ExtendExpiration gives a pod's 3607 s token a year, with warnafter at 3607 s
	// (--service-account-extend-token-expiration).
	ExtendExpiration bool
}

// TokenREST is serviceaccounts/token: a TokenRequest posted for a service account returns
// a token for it, bound to a pod, a secret or a node when the request names one.
type TokenREST struct {
	serviceAccounts, pods, secrets, nodes rest.Getter
	issuer                                TokenIssuer
	opts                                  TokenOptions
	audiences                             sets.Set[string]
}

// NewTokenREST returns the token subresource, finding the objects with the stores' getters.
func NewTokenREST(serviceAccounts, pods, secrets, nodes rest.Getter, issuer TokenIssuer, opts TokenOptions) *TokenREST {
	return &TokenREST{serviceAccounts: serviceAccounts, pods: pods, secrets: secrets, nodes: nodes,
		issuer: issuer, opts: opts, audiences: sets.New(opts.Audiences...)}
}

var tokenRequestKind = authenticationv1.SchemeGroupVersion.WithKind("TokenRequest")

var (
	_ rest.NamedCreater                   = &TokenREST{}
	_ rest.GroupVersionKindProvider       = &TokenREST{}
	_ rest.SubresourceObjectMetaPreserver = &TokenREST{}
)

func (r *TokenREST) New() runtime.Object { return &authenticationv1.TokenRequest{} }
func (r *TokenREST) Destroy()            {}

// GroupVersionKind says the subresource speaks authentication.k8s.io/v1 TokenRequest.
func (r *TokenREST) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return tokenRequestKind
}

// PreserveRequestObjectMetaSystemFieldsOnSubresourceCreate keeps the request's name and UID,
// which Create checks against the service account's.
func (r *TokenREST) PreserveRequestObjectMetaSystemFieldsOnSubresourceCreate() bool { return true }

// Create issues a token for the service account name, in kube-apiserver's steps: check the
// request against the account, default and validate it, admit it, find the bound object,
// cap and extend the expiration, sign.
func (r *TokenREST) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	req, ok := obj.(*authenticationv1.TokenRequest)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a TokenRequest: %T", obj))
	}
	namespace, ok := genericapirequest.NamespaceFrom(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("namespace is required")
	}
	gk := tokenRequestKind.GroupKind()
	if req.Name != "" && req.Name != name {
		return nil, apierrors.NewInvalid(gk, name, field.ErrorList{field.Invalid(field.NewPath("metadata").Child("name"), req.Name, "must match the service account name if specified")})
	}
	if req.Namespace != "" && req.Namespace != namespace {
		return nil, apierrors.NewInvalid(gk, name, field.ErrorList{field.Invalid(field.NewPath("metadata").Child("namespace"), req.Namespace, "must match the service account namespace if specified")})
	}
	saObj, err := r.serviceAccounts.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	sa := saObj.(*corev1.ServiceAccount)
	if req.UID != "" && req.UID != sa.UID {
		return nil, apierrors.NewConflict(schema.GroupResource{Group: gk.Group, Resource: gk.Kind}, name,
			fmt.Errorf("the UID in the token request (%s) does not match the UID of the service account (%s)", req.UID, sa.UID))
	}

	if req.Spec.ExpirationSeconds == nil {
		req.Spec.ExpirationSeconds = ptrTo(int64(defaultExpirationSeconds))
	}
	if len(req.Spec.Audiences) == 0 {
		req.Spec.Audiences = r.opts.Audiences
	}
	req.Name, req.Namespace, req.UID = sa.Name, sa.Namespace, sa.UID
	now := time.Now()
	req.CreationTimestamp = metav1.NewTime(now)
	req.Status = authenticationv1.TokenRequestStatus{}
	if errs := ValidateTokenRequest(req); len(errs) != 0 {
		return nil, apierrors.NewInvalid(gk, "", errs)
	}
	if createValidation != nil {
		if err := createValidation(ctx, obj.DeepCopyObject()); err != nil {
			return nil, err
		}
	}

	tok := serviceaccount.Token{ServiceAccount: sa, Audiences: req.Spec.Audiences}
	if ref := req.Spec.BoundObjectRef; ref != nil {
		if err := r.bind(ctx, name, namespace, ref, &tok); err != nil {
			return nil, err
		}
	}

	if maxSeconds := int64(r.opts.MaxExpiration / time.Second); maxSeconds > 0 && *req.Spec.ExpirationSeconds > maxSeconds {
		warning.AddWarning(ctx, "", fmt.Sprintf("requested expiration of %d seconds shortened to %d seconds", *req.Spec.ExpirationSeconds, maxSeconds))
		req.Spec.ExpirationSeconds = ptrTo(maxSeconds)
	}
	tok.ExpirationSeconds = *req.Spec.ExpirationSeconds
	// The admission plugin's 3607 s is how a pod's projected token is recognised: it gets a
	// year, and warnafter tells when the pod should have replaced it.
	if r.opts.ExtendExpiration && tok.Pod != nil && tok.ExpirationSeconds == serviceaccount.WarnOnlyExpirationSeconds && r.audiences.HasAll(tok.Audiences...) {
		tok.WarnAfterSeconds = tok.ExpirationSeconds
		tok.ExpirationSeconds = serviceaccount.ExtendedExpirationSeconds
	}
	token, jti, err := r.issuer.Issue(tok)
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("failed to generate token: %w", err))
	}
	out := req.DeepCopy()
	out.Status = authenticationv1.TokenRequestStatus{
		Token: token,
		// The expiration asked for, also of an extended token: the pod should renew by then.
		ExpirationTimestamp: metav1.NewTime(now.Add(time.Duration(*out.Spec.ExpirationSeconds) * time.Second)),
	}
	audit.AddAuditAnnotation(ctx, apiserverserviceaccount.IssuedCredentialIDAuditAnnotationKey, authenticationtokenjwt.CredentialIDForJTI(jti))
	return out, nil
}

// bind finds the object a token is to be bound to and puts it into tok.
func (r *TokenREST) bind(ctx context.Context, saName, namespace string, ref *authenticationv1.BoundObjectReference, tok *serviceaccount.Token) error {
	gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
	var uid types.UID
	switch {
	case gvk.Group == "" && gvk.Kind == "Pod":
		obj, err := r.pods.Get(ctx, ref.Name, &metav1.GetOptions{})
		if err != nil {
			return err
		}
		pod := obj.(*corev1.Pod)
		if saName != pod.Spec.ServiceAccountName {
			return apierrors.NewBadRequest(fmt.Sprintf("cannot bind token for serviceaccount %q to pod running with different serviceaccount name.", saName))
		}
		uid = pod.UID
		tok.Pod = pod
		if pod.Spec.NodeName != "" {
			node, err := r.podNode(ctx, pod)
			if err != nil {
				return err
			}
			tok.Node = node
		}
	case gvk.Group == "" && gvk.Kind == "Node":
		obj, err := r.nodes.Get(genericapirequest.WithNamespace(ctx, ""), ref.Name, &metav1.GetOptions{})
		if err != nil {
			return err
		}
		tok.Node = obj.(*corev1.Node)
		uid = tok.Node.UID
	case gvk.Group == "" && gvk.Kind == "Secret":
		obj, err := r.secrets.Get(ctx, ref.Name, &metav1.GetOptions{})
		if err != nil {
			return err
		}
		tok.Secret = obj.(*corev1.Secret)
		uid = tok.Secret.UID
	case isWebhookRef(ref):
		return apierrors.NewBadRequest(fmt.Sprintf("cannot bind token to object of type %s (feature gate %s is disabled)", gvk.String(), "APIServerWebhookAuthenticationToken"))
	default:
		return apierrors.NewBadRequest(fmt.Sprintf("cannot bind token to object of type %s", gvk.String()))
	}
	if ref.UID != "" && uid != ref.UID {
		return apierrors.NewConflict(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, ref.Name,
			fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
	}
	return nil
}

// podNode is the node a bound pod runs on, named in the token for information: from the
// watch cache first, then from etcd; a node that is gone is named without its UID.
func (r *TokenREST) podNode(ctx context.Context, pod *corev1.Pod) (*corev1.Node, error) {
	ctx = genericapirequest.WithNamespace(ctx, "")
	obj, err := r.nodes.Get(ctx, pod.Spec.NodeName, &metav1.GetOptions{ResourceVersion: "0"})
	if err != nil {
		obj, err = r.nodes.Get(ctx, pod.Spec.NodeName, &metav1.GetOptions{})
	}
	switch {
	case apierrors.IsNotFound(err):
		klog.FromContext(ctx).V(4).Info("The node of a pod a token is bound to is gone", "pod", klog.KObj(pod), "node", pod.Spec.NodeName)
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: pod.Spec.NodeName}}, nil
	case err != nil:
		return nil, apierrors.NewInternalError(err)
	}
	return obj.(*corev1.Node), nil
}

func ptrTo[T any](v T) *T { return &v }
