package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

// rootCACmd stands in for kube-controller-manager's root-ca-cert-publisher until berth
// controllers has one (the identities issue): every namespace gets the ConfigMap
// kube-root-ca.crt holding the cluster CA, which the suite waits for in each test's
// namespace. It runs until SIGTERM.
func rootCACmd(args []string) error {
	var kubeconfig, caFile string
	if err := flags("rootca", args, func(fs *flag.FlagSet) {
		fs.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig")
		fs.StringVar(&caFile, "ca", "", "the cluster CA certificate")
	}); err != nil {
		return err
	}
	ca, err := os.ReadFile(caFile)
	if err != nil {
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
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	publish := func(obj any) {
		ns, ok := obj.(*corev1.Namespace)
		if !ok || ns.Status.Phase == corev1.NamespaceTerminating {
			return
		}
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Annotations: map[string]string{"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."}},
			Data:       map[string]string{"ca.crt": string(ca)},
		}
		_ = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := cs.CoreV1().ConfigMaps(ns.Name).Create(ctx, cm, metav1.CreateOptions{})
			if err == nil || apierrors.IsAlreadyExists(err) || apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
				return true, nil
			}
			fmt.Fprintf(os.Stderr, "rootca: %s: %v\n", ns.Name, err)
			return false, nil
		})
	}
	f := informers.NewSharedInformerFactory(cs, 0)
	inf := f.Core().V1().Namespaces().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		// In the handler itself, not a goroutine of its own: the informer serializes
		// handlers and f.Shutdown waits for them.
		AddFunc:    publish,
		UpdateFunc: func(_, obj any) { publish(obj) },
	}); err != nil {
		return err
	}
	f.Start(ctx.Done())
	<-ctx.Done()
	f.Shutdown()
	return nil
}
