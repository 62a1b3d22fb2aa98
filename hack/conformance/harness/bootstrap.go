package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// bootstrapCmd makes the binding a kubeadm cluster has beside the API server's own
// bootstrap policy: the API server's kubelet client may use the node API
// (system:kubelet-api-admin). berth controllers needs none: it runs as
// system:kube-controller-manager with each controller's own service account, which the
// bootstrap policy binds to its controller role.
func bootstrapCmd(args []string) error {
	var kubeconfig string
	if err := flags("bootstrap", args, func(fs *flag.FlagSet) {
		fs.StringVar(&kubeconfig, "kubeconfig", "", "admin kubeconfig")
	}); err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bindings := []struct{ name, role, user string }{
		{"kube-apiserver-kubelet-client", "system:kubelet-api-admin", "kube-apiserver-kubelet-client"},
	}
	for _, b := range bindings {
		crb := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: b.name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: b.role},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: b.user}},
		}
		if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("binding %s to %s: %w", b.user, b.role, err)
		}
	}
	return nil
}
