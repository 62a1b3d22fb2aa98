package bench

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/cluster"
	"github.com/berth-cluster/berth/pkg/controllers"
	"github.com/berth-cluster/berth/pkg/scheduler"
	schedconfig "github.com/berth-cluster/berth/pkg/scheduler/config"
)

// ScheduleOptions configure the schedule scenario.
type ScheduleOptions struct {
	// Kubeconfig names a cluster with a scheduler; empty starts a control plane and a
	// scheduler in this process.
	Kubeconfig string
	Nodes      int
	Pods       int
	// Creators is how many goroutines create pods at once.
	Creators int
}

// RunSchedule creates Nodes nodes (API objects only) and Pods pods, and measures how fast the
// scheduler binds them: throughput from the first pod created to the last pod bound, and each
// pod's latency from its creation request to the watch event that shows it bound.
func RunSchedule(ctx context.Context, out io.Writer, o ScheduleOptions) error {
	t, stop, err := scheduleTarget(ctx, o.Kubeconfig)
	if err != nil {
		return err
	}
	defer stop()
	ns, err := benchNamespace(ctx, t)
	if err != nil {
		return err
	}
	defer t.client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})

	prefix := fmt.Sprintf("bench-%d-", time.Now().UnixNano()%1e6)
	if err := createNodes(ctx, t, prefix, o.Nodes, o.Creators); err != nil {
		return err
	}
	defer deleteNodes(t, prefix, o.Nodes, o.Creators)
	// Let the scheduler's informer see every node before the clock starts.
	time.Sleep(2 * time.Second)

	latency := &latencies{name: "create → bound"}
	start, last, retried, err := createAndWatch(ctx, t, ns, o.Pods, o.Creators, time.Duration(o.Pods)*20*time.Millisecond+2*time.Minute,
		latency, "bound", func(typ watch.EventType, pod *corev1.Pod) bool {
			return typ == watch.Modified && pod.Spec.NodeName != ""
		})
	if err != nil {
		return err
	}
	elapsed := last.Sub(start)
	rate := float64(o.Pods) / elapsed.Seconds()
	fmt.Fprintf(out, "schedule: %d pods on %d nodes\n\n", o.Pods, o.Nodes)
	printTable(out, []*latencies{latency})
	fmt.Fprintf(out, "\nfirst created → last bound: %s, %.0f pods/s; creates retried after server timeouts: %d\n\n", elapsed.Round(time.Millisecond), rate, retried)
	return printJSON(out, map[string]interface{}{
		"nodes": o.Nodes, "pods": o.Pods, "pods_per_second": round1(rate),
		"p50_ms": ms(latency.quantile(0.5)), "p99_ms": ms(latency.quantile(0.99)), "create_retries": retried,
	})
}

func round1(f float64) float64 { return float64(int64(f*10+0.5)) / 10 }

// scheduleTarget connects to a cluster, or starts a control plane with the controllers and a
// scheduler in this process (in a temporary directory).
func scheduleTarget(ctx context.Context, kubeconfig string) (*target, func(), error) {
	if kubeconfig != "" {
		t, err := connect(ctx, kubeconfig)
		return t, func() {}, err
	}
	dir, err := tempDir()
	if err != nil {
		return nil, nil, err
	}
	cfg, err := schedconfig.Load("")
	if err != nil {
		return nil, nil, err
	}
	cp := cluster.New(cluster.Config{DataDir: dir, Components: []cluster.Component{
		{Name: "controllers", Run: func(ctx context.Context, admin *rest.Config) error {
			return controllers.Run(ctx, admin, controllers.Options{})
		}},
		{Name: "scheduler", Run: func(ctx context.Context, admin *rest.Config) error {
			return scheduler.Run(ctx, admin, cfg, scheduler.ServerOptions{})
		}},
	}})
	runCtx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	done := make(chan error, 1)
	go func() { done <- cp.Run(runCtx) }()
	stop := func() {
		cancel()
		<-done
		removeAll(dir)
	}
	select {
	case <-cp.Ready():
	case err := <-done:
		removeAll(dir)
		return nil, nil, err
	case <-ctx.Done():
		stop()
		return nil, nil, ctx.Err()
	}
	t, err := newTarget(cp.AdminConfig())
	if err != nil {
		stop()
		return nil, nil, err
	}
	return t, stop, nil
}

// createNodes creates n nodes, as a node agent would register them: Ready, with capacity.
func createNodes(ctx context.Context, t *target, prefix string, n, workers int) error {
	return parallel(ctx, n, workers, func(i int) error {
		name := fmt.Sprintf("%s%05d", prefix, i)
		capacity := corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("32"),
			corev1.ResourceMemory: resource.MustParse("128Gi"),
			corev1.ResourcePods:   resource.MustParse("110"),
		}
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
				corev1.LabelHostname:     name,
				corev1.LabelTopologyZone: fmt.Sprintf("zone-%d", i%3),
			}},
			Status: corev1.NodeStatus{
				Capacity: capacity, Allocatable: capacity,
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
			},
		}
		_, err := t.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		return err
	})
}

func deleteNodes(t *target, prefix string, n, workers int) {
	_ = parallel(context.Background(), n, workers, func(i int) error {
		return t.client.CoreV1().Nodes().Delete(context.Background(), fmt.Sprintf("%s%05d", prefix, i), metav1.DeleteOptions{})
	})
}

// parallel runs do(0..n-1) on workers goroutines and returns the first error.
func parallel(ctx context.Context, n, workers int, do func(i int) error) error {
	if workers < 1 {
		workers = 1
	}
	next := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := do(i); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	var err error
loop:
	for i := 0; i < n; i++ {
		select {
		case next <- i:
		case err = <-errs:
			break loop
		case <-ctx.Done():
			err = ctx.Err()
			break loop
		}
	}
	close(next)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return err
}
