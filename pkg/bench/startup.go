package bench

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/berth-cluster/berth/pkg/cri/pause"
)

// StartupOptions configure the startup scenario.
type StartupOptions struct {
	// Kubeconfig names a cluster with at least one Ready node; empty starts `berth up` (with
	// its node agent, so as root) in a temporary directory.
	Kubeconfig string
	// Pods are created at once; Rounds repeats that, the pods of each round deleted before
	// the next.
	Pods   int
	Rounds int
	// Image runs in every pod; it must be on the node already (the default, berth's sandbox
	// image, always is).
	Image string
}

// RunStartup measures pod startup latency as Kubernetes' SLI defines it: from the pod's
// creation to all its containers started, as a watch observes it; the image is on the node.
func RunStartup(ctx context.Context, out io.Writer, o StartupOptions) error {
	t, err := connectWith(ctx, o.Kubeconfig, clusterOptions{node: true})
	if err != nil {
		return err
	}
	defer t.stop()
	if o.Image == "" {
		o.Image = pause.ImageName
	}
	if err := waitForReadyNode(ctx, t); err != nil {
		return err
	}
	ns, err := benchNamespace(ctx, t)
	if err != nil {
		return err
	}
	defer t.client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})

	latency := &latencies{name: "create → all containers started"}
	allRunning := &latencies{name: "first create → last running"}
	for round := 0; round < o.Rounds; round++ {
		d, err := startupRound(ctx, t, ns, round, o, latency)
		if err != nil {
			return err
		}
		allRunning.add(d)
		fmt.Fprintf(out, "round %d: %d pods running %s after the first create\n", round, o.Pods, d.Round(time.Millisecond))
	}
	fmt.Fprintf(out, "\nstartup: %d pods at once, %d rounds, image %s\n\n", o.Pods, o.Rounds, o.Image)
	printTable(out, []*latencies{latency, allRunning})
	fmt.Fprintln(out)
	return printJSON(out, map[string]interface{}{
		"pods": o.Pods, "rounds": o.Rounds,
		"p50_ms": ms(latency.quantile(0.5)), "p99_ms": ms(latency.quantile(0.99)),
		"all_running_ms": ms(allRunning.quantile(0.5)),
	})
}

// startupRound creates o.Pods pods at once, waits for all to run, then deletes them and waits
// until they are gone.
func startupRound(ctx context.Context, t *target, ns string, round int, o StartupOptions, latency *latencies) (time.Duration, error) {
	pods := t.client.CoreV1().Pods(ns)
	list, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		return 0, err
	}
	defer w.Stop()

	var mu sync.Mutex
	created := map[string]time.Time{}
	first := time.Now()
	errs := make(chan error, 1)
	go func() {
		errs <- parallel(ctx, o.Pods, o.Pods, func(i int) error {
			name := fmt.Sprintf("startup-%d-%04d", round, i)
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: corev1.PodSpec{
					Containers:                    []corev1.Container{{Name: "c", Image: o.Image, ImagePullPolicy: corev1.PullIfNotPresent}},
					TerminationGracePeriodSeconds: new(int64),
				},
			}
			mu.Lock()
			created[name] = time.Now()
			mu.Unlock()
			_, err := pods.Create(ctx, pod, metav1.CreateOptions{})
			return err
		})
	}()
	running := 0
	var last time.Time
	timeout := time.After(2 * time.Minute)
	for running < o.Pods {
		select {
		case err := <-errs:
			if err != nil {
				return 0, fmt.Errorf("creating pods: %w", err)
			}
			errs = nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return 0, fmt.Errorf("the watch ended after %d running pods", running)
			}
			pod, isPod := ev.Object.(*corev1.Pod)
			if !isPod || ev.Type == watch.Deleted || !allStarted(pod) {
				continue
			}
			mu.Lock()
			c, pending := created[pod.Name]
			delete(created, pod.Name)
			mu.Unlock()
			if !pending {
				continue
			}
			last = time.Now()
			latency.add(last.Sub(c))
			running++
		case <-timeout:
			return 0, fmt.Errorf("round %d: only %d of %d pods running after 2 minutes%s", round, running, o.Pods, whyPending(ctx, pods))
		}
	}
	if err := pods.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return 0, err
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := pods.List(ctx, metav1.ListOptions{})
		return err == nil && len(l.Items) == 0, err
	})
	if err != nil {
		return 0, err
	}
	// The pods are gone from the API before the node has torn their sandboxes down; on a
	// small machine that teardown would eat into the next round.
	select {
	case <-time.After(settleTime):
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	return last.Sub(first), nil
}

// settleTime is the pause after a round's pods are deleted.
const settleTime = 10 * time.Second

// whyPending describes the first pod that has not started, by its status and the pods'
// warning events, for the error of a round that timed out.
func whyPending(ctx context.Context, pods typedcorev1.PodInterface) string {
	l, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil {
		return ""
	}
	for _, p := range l.Items {
		if allStarted(&p) {
			continue
		}
		msg := fmt.Sprintf("; pod %s is %s", p.Name, p.Status.Phase)
		for _, c := range p.Status.Conditions {
			if c.Status != corev1.ConditionTrue && c.Message != "" {
				msg += fmt.Sprintf(", %s: %s", c.Type, c.Message)
			}
		}
		for _, cs := range p.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil {
				msg += fmt.Sprintf(", container %s waiting: %s %s", cs.Name, w.Reason, w.Message)
			}
		}
		return msg
	}
	return ""
}

// allStarted reports whether every container of the pod has started.
func allStarted(pod *corev1.Pod) bool {
	if len(pod.Status.ContainerStatuses) != len(pod.Spec.Containers) {
		return false
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Running == nil {
			return false
		}
	}
	return true
}

// waitForReadyNode waits until a node is Ready.
func waitForReadyNode(ctx context.Context, t *target) error {
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		nodes, err := t.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, n := range nodes.Items {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					return true, nil
				}
			}
		}
		return false, nil
	})
}
