package cluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// DNSIdentity is the cluster DNS's: the service account kube-system/coredns, as kubeadm and
// k3s run CoreDNS, so that the system:coredns role kubeadm binds to it applies unchanged.
var DNSIdentity = Identity{
	User:   "system:serviceaccount:kube-system:coredns",
	Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system"},
}

// EnsureDNSAccess creates what kubeadm's CoreDNS addon creates besides the server: the
// service account kube-system/coredns, the ClusterRole system:coredns (read Services,
// EndpointSlices, Endpoints, Pods and Namespaces) and its binding. Existing objects are left
// as they are.
func EnsureDNSAccess(ctx context.Context, admin *rest.Config) error {
	client, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return err
	}
	const name = "system:coredns"
	create := func(what string, err error) error {
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s: %w", what, err)
		}
		return nil
	}
	_, err = client.CoreV1().ServiceAccounts(metav1.NamespaceSystem).Create(ctx,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "coredns"}}, metav1.CreateOptions{})
	if err := create("the coredns service account", err); err != nil {
		return err
	}
	_, err = client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"endpoints", "services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
		},
	}, metav1.CreateOptions{})
	if err := create("the "+name+" ClusterRole", err); err != nil {
		return err
	}
	_, err = client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "coredns", Namespace: metav1.NamespaceSystem}},
	}, metav1.CreateOptions{})
	return create("the "+name+" ClusterRoleBinding", err)
}
