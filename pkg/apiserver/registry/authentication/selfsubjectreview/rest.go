// Package selfsubjectreview is the registry of self subject reviews (authentication.k8s.io/v1):
// "who am I?", what `kubectl auth whoami` asks.
//
// In the API server's flow a review is decoded and admitted, never stored: the answer is the
// user the request's authentication step found.
package selfsubjectreview

import (
	"context"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/authentication/tokenreview"
)

// REST answers self subject reviews.
type REST struct{}

// NewREST returns the selfsubjectreviews resource.
func NewREST() *REST { return &REST{} }

var (
	_ rest.Creater              = &REST{}
	_ rest.Scoper               = &REST{}
	_ rest.SingularNameProvider = &REST{}
)

func (r *REST) New() runtime.Object     { return &authenticationv1.SelfSubjectReview{} }
func (r *REST) Destroy()                {}
func (r *REST) NamespaceScoped() bool   { return false }
func (r *REST) GetSingularName() string { return "selfsubjectreview" }

// Create returns the requester as the API server authenticated them.
func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	if createValidation != nil {
		if err := createValidation(ctx, obj.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	if _, ok := obj.(*authenticationv1.SelfSubjectReview); !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a SelfSubjectReview: %#v", obj))
	}
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("no user present on request")
	}
	return &authenticationv1.SelfSubjectReview{
		ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(time.Now())},
		Status: authenticationv1.SelfSubjectReviewStatus{
			UserInfo: tokenreview.UserInfo(u.GetName(), u.GetUID(), u.GetGroups(), u.GetExtra()),
		},
	}, nil
}
