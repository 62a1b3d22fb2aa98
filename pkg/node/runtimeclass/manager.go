// Package runtimeclass is the node agent's view of node.k8s.io/v1 RuntimeClasses (the
// kubelet's runtimeclass manager): step 4 of a pod's start (seed 001, "创建sandbox 容器")
// asks it which CRI handler the pod's runtimeClassName stands for, and passes that handler
// to RunPodSandbox. A class that does not exist fails the sandbox, as on the kubelet.
package runtimeclass

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	nodeinformers "k8s.io/client-go/informers/node/v1"
	"k8s.io/client-go/kubernetes"
	nodelisters "k8s.io/client-go/listers/node/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/util/panics"
)

// Manager looks RuntimeClasses up in an informer of them all.
type Manager struct {
	informer cache.SharedIndexInformer
	lister   nodelisters.RuntimeClassLister
}

// NewManager makes the informer of client's RuntimeClasses; Run runs it.
func NewManager(client kubernetes.Interface) *Manager {
	informer := nodeinformers.NewRuntimeClassInformer(client, 0, cache.Indexers{})
	return &Manager{informer: informer, lister: nodelisters.NewRuntimeClassLister(informer.GetIndexer())}
}

// Run runs the informer until ctx ends; a panic inside it is recovered and counted.
func (m *Manager) Run(ctx context.Context) {
	_ = panics.Call(ctx, "runtimeclasses", func() error {
		m.informer.RunWithContext(klog.NewContext(ctx, klog.FromContext(ctx).WithValues("informer", "runtimeclasses")))
		return nil
	})
}

// LookupRuntimeHandler is the handler of the class name ("" for none): the kubelet's
// errors, a NotFound for a class that does not exist.
func (m *Manager) LookupRuntimeHandler(name *string) (string, error) {
	if name == nil || *name == "" {
		return "", nil
	}
	if !m.informer.HasSynced() {
		return "", fmt.Errorf("failed to lookup RuntimeClass %s: the RuntimeClasses are not listed yet", *name)
	}
	rc, err := m.lister.Get(*name)
	if apierrors.IsNotFound(err) {
		return "", err
	}
	if err != nil {
		return "", fmt.Errorf("failed to lookup RuntimeClass %s: %w", *name, err)
	}
	return rc.Handler, nil
}
