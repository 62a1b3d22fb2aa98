package apiserver

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/scheduling/priorityclass"
)

// SystemNamespaces exist in every cluster; the API server creates them and recreates them if
// they go, as kube-apiserver's bootstrap controller does.
var SystemNamespaces = []string{
	metav1.NamespaceDefault,
	metav1.NamespaceSystem,
	metav1.NamespacePublic,
	corev1.NamespaceNodeLease,
}

// bootstrapInterval is how often the system objects are checked again.
const bootstrapInterval = time.Minute

// bootstrap ensures the system namespaces and the built-in priority classes exist, now and
// every minute, until ctx ends.
func bootstrap(ctx context.Context, client kubernetes.Interface) {
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		for _, name := range SystemNamespaces {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
			if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) && ctx.Err() == nil {
				klog.FromContext(ctx).Error(err, "Creating a system namespace", "namespace", name)
			}
		}
		for _, pc := range priorityclass.SystemPriorityClasses() {
			if _, err := client.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) && ctx.Err() == nil {
				klog.FromContext(ctx).Error(err, "Creating a system priority class", "priorityClass", pc.Name)
			}
		}
	}, bootstrapInterval)
}
