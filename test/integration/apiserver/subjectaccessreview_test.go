package apiserver

import (
	"fmt"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/berth-cluster/berth/pkg/cluster"
	"github.com/berth-cluster/berth/pkg/cluster/pki"
)

// TestSubjectAccessReview: the API server answers authorization.k8s.io/v1 reviews itself, as
// the node API asks them (protobuf, the node agent's encoding): system:masters and the API
// server's kubelet client may use a node's API, jane may not; malformed reviews get 422 naming
// the field; and only system:masters may ask.
func TestSubjectAccessReview(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	admin := kubernetes.NewForConfigOrDie(c.ProtobufConfig())
	nodeProxy := func(user string, groups ...string) *authorizationv1.SubjectAccessReview {
		return &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   user,
			Groups: groups,
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: "create", Version: "v1", Resource: "nodes", Subresource: "proxy", Name: "node-a",
			},
		}}
	}
	for _, tt := range []struct {
		name    string
		review  *authorizationv1.SubjectAccessReview
		allowed bool
	}{
		{"admin", nodeProxy("admin", "system:masters", "system:authenticated"), true},
		{"the API server's kubelet client", nodeProxy(cluster.KubeletClientUser, "system:authenticated"), true},
		{"jane", nodeProxy("jane", "developers", "system:authenticated"), false},
		{"the kubelet client reading secrets", &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               cluster.KubeletClientUser,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Version: "v1", Resource: "secrets", Namespace: "default"},
		}}, false},
		// system:public-info-viewer is bound to system:authenticated and system:unauthenticated:
		// a review naming neither group gets no, as on any RBAC cluster.
		{"jane reading /healthz", &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:                  "jane",
			Groups:                []string{"system:authenticated"},
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Verb: "get", Path: "/healthz"},
		}}, true},
		{"jane in no group reading /healthz", &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:                  "jane",
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Verb: "get", Path: "/healthz"},
		}}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, tt.review, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Status.Allowed != tt.allowed || got.Status.Denied {
				t.Errorf("status %+v, want allowed=%v", got.Status, tt.allowed)
			}
			if got.Spec.User != tt.review.Spec.User {
				t.Errorf("the answer's spec %+v differs from the question's", got.Spec)
			}
		})
	}

	for _, tt := range []struct {
		name   string
		review *authorizationv1.SubjectAccessReview
		field  string
	}{
		{"no subject", &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Verb: "get", Path: "/"},
		}}, "spec.user"},
		{"no attributes", &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "jane"}}, "spec"},
		{"both attributes", &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:                  "jane",
			ResourceAttributes:    &authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods"},
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Verb: "get", Path: "/"},
		}}, "spec"},
		{"a name", &authorizationv1.SubjectAccessReview{
			ObjectMeta: metav1.ObjectMeta{Name: "mine"},
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User: "jane", NonResourceAttributes: &authorizationv1.NonResourceAttributes{Verb: "get", Path: "/"},
			},
		}, "metadata"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, tt.review, metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) {
				t.Fatalf("got %v, want 422", err)
			}
			status := err.(apierrors.APIStatus).Status()
			if status.Details == nil || len(status.Details.Causes) == 0 || status.Details.Causes[0].Field != tt.field {
				t.Errorf("422 %+v, want it to name %s", status, tt.field)
			}
		})
	}

	ca, err := pki.EnsureCA(cluster.PKIDir(c.DataDir), "berth-ca")
	if err != nil {
		t.Fatal(err)
	}
	data, err := cluster.ClientKubeconfig(ca, c.Config.Host, "jane", []string{"developers"})
	if err != nil {
		t.Fatal(err)
	}
	config, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	jane := kubernetes.NewForConfigOrDie(config)
	_, err = jane.AuthorizationV1().SubjectAccessReviews().Create(ctx, nodeProxy("jane"), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !contains(err.Error(), `cannot create resource "subjectaccessreviews"`) {
		t.Errorf("jane asking a review: %v, want 403", err)
	}
	resources, err := admin.Discovery().ServerResourcesForGroupVersion("authorization.k8s.io/v1")
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	for _, r := range resources.APIResources {
		if len(r.Verbs) != 1 || r.Verbs[0] != "create" {
			t.Errorf("%s verbs %v, want create only", r.Name, r.Verbs)
		}
		served[fmt.Sprintf("%s namespaced=%v", r.Name, r.Namespaced)] = true
	}
	for _, want := range []string{"subjectaccessreviews namespaced=false", "selfsubjectaccessreviews namespaced=false",
		"localsubjectaccessreviews namespaced=true", "selfsubjectrulesreviews namespaced=false"} {
		if !served[want] {
			t.Errorf("authorization.k8s.io/v1 discovery %v lacks %s", served, want)
		}
	}
	if len(resources.APIResources) != 4 {
		t.Errorf("authorization.k8s.io/v1 serves %d resources, want 4", len(resources.APIResources))
	}
}
