// Package scheduler holds the integration tests of berth's scheduler: the real scheduler
// against the real API server on a real etcd, in process. Nodes are API objects only; no node
// agent runs, so a test plays the node agent where one is needed (confirming a deletion).
package scheduler

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/cluster"
	"github.com/berth-cluster/berth/pkg/scheduler"
	"github.com/berth-cluster/berth/pkg/scheduler/config"
	st "github.com/berth-cluster/berth/pkg/scheduler/testing"
	"github.com/berth-cluster/berth/test/integration/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

// schedulerComponent runs a scheduler with kc (defaults when nil) and no leader election.
func schedulerComponent(kc *configv1.KubeSchedulerConfiguration) cluster.Component {
	return cluster.Component{Name: "scheduler", Run: func(ctx context.Context, admin *rest.Config) error {
		if kc == nil {
			kc = &configv1.KubeSchedulerConfiguration{}
		}
		kc = kc.DeepCopy()
		if kc.LeaderElection.LeaderElect == nil {
			kc.LeaderElection.LeaderElect = ptr.To(false)
		}
		cfg, err := config.Complete(kc)
		if err != nil {
			return err
		}
		return scheduler.Run(ctx, admin, cfg, scheduler.ServerOptions{})
	}}
}

// runComponent runs component against c until the test ends, and waits for it to stop.
func runComponent(t *testing.T, ctx context.Context, c *framework.Cluster, component cluster.Component) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- component.Run(ctx, rest.CopyConfig(c.Config)) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("%s: %v", component.Name, err)
		}
	})
}

// startWithScheduler starts a control plane with a scheduler of kc.
func startWithScheduler(t *testing.T, kc *configv1.KubeSchedulerConfiguration) *framework.Cluster {
	return framework.Start(t, framework.Options{Components: []cluster.Component{schedulerComponent(kc)}})
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// newNamespace creates a namespace and waits until pods may be created in it.
func newNamespace(t *testing.T, ctx context.Context, c kubernetes.Interface) string {
	t.Helper()
	ns, err := c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "sched-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := c.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// createNodes creates nodes (API objects only), removing them when the test ends.
func createNodes(t *testing.T, ctx context.Context, c kubernetes.Interface, nodes ...*v1.Node) {
	t.Helper()
	for _, n := range nodes {
		if _, err := c.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		name := n.Name
		t.Cleanup(func() { _ = c.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
}

// node builds a schedulable node with cpu, memory and pods capacity.
func node(name, cpu string) *st.NodeWrapper {
	return st.MakeNode().Name(name).Capacity(map[v1.ResourceName]string{
		v1.ResourceCPU: cpu, v1.ResourceMemory: "16Gi", v1.ResourcePods: "110",
	})
}

// createPod creates a pod in ns (the builder's namespace is replaced) and returns it.
func createPod(t *testing.T, ctx context.Context, c kubernetes.Interface, ns string, p *v1.Pod) *v1.Pod {
	t.Helper()
	p = p.DeepCopy()
	p.Namespace = ns
	p.UID = ""
	out, err := c.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s: %v", p.Name, err)
	}
	return out
}

// waitForNode waits until the pod is bound and returns its node.
func waitForNode(t *testing.T, ctx context.Context, c kubernetes.Interface, ns, name string, timeout time.Duration) string {
	t.Helper()
	var nodeName string
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		p, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		nodeName = p.Spec.NodeName
		return nodeName != "", nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s was not bound within %s: %v", ns, name, timeout, err)
	}
	return nodeName
}

// waitUnschedulable waits for PodScheduled=False/Unschedulable and returns its message.
func waitUnschedulable(t *testing.T, ctx context.Context, c kubernetes.Interface, ns, name string) string {
	t.Helper()
	var msg string
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == v1.PodScheduled && cond.Status == v1.ConditionFalse && cond.Reason == v1.PodReasonUnschedulable {
				msg = cond.Message
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s never became Unschedulable: %v", ns, name, err)
	}
	return msg
}

// stayUnbound checks that the pod is still not bound after d.
func stayUnbound(t *testing.T, ctx context.Context, c kubernetes.Interface, ns, name string, d time.Duration) {
	t.Helper()
	time.Sleep(d)
	p, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.NodeName != "" {
		t.Fatalf("pod %s was bound to %s, want it left alone", name, p.Spec.NodeName)
	}
}

// confirmDeletions plays the node agents: a pod that is terminating goes at once.
func confirmDeletions(ctx context.Context, c kubernetes.Interface, ns string) {
	go func() {
		for ctx.Err() == nil {
			pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err == nil {
				for _, p := range pods.Items {
					if p.DeletionTimestamp != nil {
						err := c.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
						if err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
							fmt.Println("confirming deletion:", err)
						}
					}
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
}
