package bench

import (
	"context"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
)

// APIOptions configure the api scenario.
type APIOptions struct {
	// Kubeconfig names the cluster to load; empty starts one.
	Kubeconfig string
	// Pods is how many pods are created, read, patched and deleted.
	Pods int
	// Lists is how many times all of them are listed.
	Lists int
	// IdleWait is how long a started cluster idles before its memory is read.
	IdleWait time.Duration
}

// RunAPI measures the latency of creating, getting, listing and patching pods one at a time,
// and the delay from a write's response to its watch event; for a cluster it starts itself,
// also that cluster's idle and peak memory.
func RunAPI(ctx context.Context, out io.Writer, o APIOptions) error {
	t, err := connect(ctx, o.Kubeconfig)
	if err != nil {
		return err
	}
	defer t.stop()

	var idleRSS int64
	if t.child != nil {
		select {
		case <-time.After(o.IdleWait):
		case <-ctx.Done():
			return ctx.Err()
		}
		idleRSS = t.rssBytes()
	}

	ns, err := benchNamespace(ctx, t)
	if err != nil {
		return err
	}
	defer t.client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	pods := t.client.CoreV1().Pods(ns)

	create := &latencies{name: "create"}
	for i := 0; i < o.Pods; i++ {
		pod := benchPod(fmt.Sprintf("bench-%05d", i))
		// No scheduler takes these pods: the scenario measures the API server, not the
		// scheduler's reaction to a thousand pods that fit nowhere.
		pod.Spec.SchedulerName = "berth-bench-api"
		start := time.Now()
		if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create: %w", err)
		}
		create.add(time.Since(start))
	}

	get := &latencies{name: "get"}
	for i := 0; i < o.Pods; i++ {
		start := time.Now()
		if _, err := pods.Get(ctx, fmt.Sprintf("bench-%05d", i), metav1.GetOptions{}); err != nil {
			return fmt.Errorf("get: %w", err)
		}
		get.add(time.Since(start))
	}

	list := &latencies{name: fmt.Sprintf("list (%d pods)", o.Pods)}
	for i := 0; i < o.Lists; i++ {
		start := time.Now()
		l, err := pods.List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("list: %w", err)
		}
		list.add(time.Since(start))
		if len(l.Items) != o.Pods {
			return fmt.Errorf("list returned %d pods, want %d", len(l.Items), o.Pods)
		}
	}

	patch, watchDelay, err := patchAndWatch(ctx, t, ns, o.Pods)
	if err != nil {
		return err
	}

	del := &latencies{name: "delete"}
	for i := 0; i < o.Pods; i++ {
		start := time.Now()
		if err := pods.Delete(ctx, fmt.Sprintf("bench-%05d", i), metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("delete: %w", err)
		}
		del.add(time.Since(start))
	}

	rows := []*latencies{create, get, list, patch, watchDelay, del}
	fmt.Fprintf(out, "api: %d pods, one request at a time\n\n", o.Pods)
	printTable(out, rows)
	result := map[string]interface{}{"scenario": "api", "pods": o.Pods}
	for _, r := range []struct {
		key string
		l   *latencies
	}{{"create", create}, {"get", get}, {"list", list}, {"patch", patch}, {"watch_delay", watchDelay}, {"delete", del}} {
		result[r.key+"_p50_ms"] = ms(r.l.quantile(0.5))
		result[r.key+"_p99_ms"] = ms(r.l.quantile(0.99))
	}
	if t.child != nil {
		result["idle_rss_mb"] = float64(idleRSS) / (1 << 20)
		result["peak_rss_mb"] = float64(t.peakRSSBytes()) / (1 << 20)
		fmt.Fprintf(out, "\nberth up RSS: idle %.1f MiB (after %s), peak %.1f MiB\n",
			float64(idleRSS)/(1<<20), o.IdleWait, float64(t.peakRSSBytes())/(1<<20))
	}
	fmt.Fprintln(out)
	return printJSON(out, result)
}

// patchAndWatch patches every pod once while a watch runs, and measures both the patches and
// how long after each patch's response its event arrives (0 when it arrives first).
func patchAndWatch(ctx context.Context, t *target, ns string, n int) (*latencies, *latencies, error) {
	w, err := t.client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: "0", AllowWatchBookmarks: false})
	if err != nil {
		return nil, nil, err
	}
	defer w.Stop()
	// Drain the initial ADDED events first.
	for seen := 0; seen < n; {
		select {
		case ev := <-w.ResultChan():
			if ev.Type == watch.Added {
				seen++
			}
		case <-time.After(30 * time.Second):
			return nil, nil, fmt.Errorf("watch: only %d of %d initial events", seen, n)
		}
	}
	patch := &latencies{name: "patch"}
	delay := &latencies{name: "watch delay"}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("bench-%05d", i)
		body := []byte(fmt.Sprintf(`{"metadata":{"labels":{"round":"%d"}}}`, i))
		start := time.Now()
		if _, err := t.client.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{}); err != nil {
			return nil, nil, fmt.Errorf("patch: %w", err)
		}
		done := time.Now()
		patch.add(done.Sub(start))
		select {
		case ev := <-w.ResultChan():
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type != watch.Modified || pod.Name != name {
				return nil, nil, fmt.Errorf("watch: unexpected %s event for %v", ev.Type, ev.Object)
			}
			d := time.Since(done)
			delay.add(d)
		case <-time.After(30 * time.Second):
			return nil, nil, fmt.Errorf("watch: no event for %s", name)
		}
	}
	return patch, delay, nil
}

// benchNamespace creates a namespace for one run and waits until pods may be created in it.
func benchNamespace(ctx context.Context, t *target) (string, error) {
	ns, err := t.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-"}}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := t.client.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	return ns.Name, err
}

func benchPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "bench"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "c", Image: "registry.example/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: mustParse("10m"), corev1.ResourceMemory: mustParse("16Mi"),
			}},
		}}},
	}
}
