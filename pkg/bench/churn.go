package bench

import (
	"context"
	"fmt"
	"io"
	"sync"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// ChurnOptions configure the churn scenario.
type ChurnOptions struct {
	// Kubeconfig names a cluster (with a scheduler); empty starts `berth up` in a temporary
	// directory. Either way the scenario starts `berth sim` with Nodes nodes against it.
	Kubeconfig string
	Nodes      int
	// Duration is how long pods are created, at Rate per second; each is deleted Lifetime
	// after its creation, so the population holds at about Rate × Lifetime.
	Duration time.Duration
	Rate     float64
	Lifetime time.Duration
	// Settle is how long to wait after the last pod is gone before memory and goroutines are
	// read again (the Go runtime returns freed memory lazily).
	Settle time.Duration
}

// churnPod is what the scenario saw of one pod.
type churnPod struct {
	created, running, gone bool
}

// RunChurn creates and deletes pods at a rate on simulated nodes and reports whether every
// pod ran and went (none lost or stuck) and whether berth up's and berth sim's heap and
// goroutines came back to what they were before.
func RunChurn(ctx context.Context, out io.Writer, o ChurnOptions) error {
	if o.Rate <= 0 || o.Duration <= 0 {
		return fmt.Errorf("--rate and --duration must be positive")
	}
	t, s, ns, _, cleanup, err := simCluster(ctx, o.Kubeconfig, o.Nodes, clusterOptions{})
	if err != nil {
		return err
	}
	defer cleanup()
	// The baseline: the nodes registered and idle.
	time.Sleep(10 * time.Second)
	baseUp, err := t.runtime(ctx)
	if err != nil {
		return err
	}
	baseSim, err := s.runtime(ctx)
	if err != nil {
		return err
	}

	var mu sync.Mutex
	pods := map[string]*churnPod{}
	list, err := t.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	resourceVersion := list.ResourceVersion
	watchDone := make(chan error, 1)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go func() { watchDone <- watchChurn(watchCtx, t, ns, resourceVersion, &mu, pods) }()

	// Peak heap and goroutines while churning, sampled every 10 s.
	var peakUp, peakSim goRuntime
	sample := func() {
		if g, err := t.runtime(ctx); err == nil {
			peakUp.Goroutines, peakUp.HeapInuse = max(peakUp.Goroutines, g.Goroutines), max(peakUp.HeapInuse, g.HeapInuse)
		}
		if g, err := s.runtime(ctx); err == nil {
			peakSim.Goroutines, peakSim.HeapInuse = max(peakSim.Goroutines, g.Goroutines), max(peakSim.HeapInuse, g.HeapInuse)
		}
	}

	var createErrs, deleteErrs int
	var wg sync.WaitGroup
	interval := time.Duration(float64(time.Second) / o.Rate)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	sampler := time.NewTicker(10 * time.Second)
	defer sampler.Stop()
	start := time.Now()
	created := 0
	for time.Since(start) < o.Duration {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-sampler.C:
			go sample()
			continue
		case <-tick.C:
		}
		name := fmt.Sprintf("churn-%07d", created)
		created++
		mu.Lock()
		pods[name] = &churnPod{created: true}
		mu.Unlock()
		wg.Go(func() {
			if _, err := t.client.CoreV1().Pods(ns).Create(ctx, benchPod(name), metav1.CreateOptions{}); err != nil {
				mu.Lock()
				createErrs++
				pods[name].created = false
				mu.Unlock()
				return
			}
			select {
			case <-time.After(o.Lifetime):
			case <-ctx.Done():
				return
			}
			if err := t.client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				mu.Lock()
				deleteErrs++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	// Every pod deleted; wait for each to be gone.
	deadline := time.Now().Add(3 * time.Minute)
	var stuck, neverRan int
	for {
		mu.Lock()
		stuck, neverRan = 0, 0
		for _, p := range pods {
			if !p.created {
				continue
			}
			if !p.gone {
				stuck++
			}
			if !p.running {
				neverRan++
			}
		}
		mu.Unlock()
		if stuck == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	churned := time.Since(start)
	stopWatch()
	if err := <-watchDone; err != nil && ctx.Err() == nil {
		return err
	}
	time.Sleep(o.Settle)
	endUp, err := t.runtime(ctx)
	if err != nil {
		return err
	}
	endSim, err := s.runtime(ctx)
	if err != nil {
		return err
	}
	flat := func(base, end goRuntime) bool {
		return end.HeapInuse <= base.HeapInuse+base.HeapInuse/5+16<<20 && end.Goroutines <= base.Goroutines+base.Goroutines/20+20
	}
	ok := stuck == 0 && neverRan == 0 && createErrs == 0 && deleteErrs == 0 && flat(baseUp, endUp) && flat(baseSim, endSim)

	fmt.Fprintf(out, "churn: %.0f pods/s for %s on %d simulated nodes, each pod deleted %s after its creation\n", o.Rate, o.Duration, o.Nodes, o.Lifetime)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "pods created\t%d\t\n", created-createErrs)
	fmt.Fprintf(tw, "never Running\t%d\t\n", neverRan)
	fmt.Fprintf(tw, "not gone (stuck)\t%d\t\n", stuck)
	fmt.Fprintf(tw, "create / delete errors\t%d / %d\t\n", createErrs, deleteErrs)
	tw.Flush()
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "process\tbaseline heap MiB\tpeak heap MiB\tend heap MiB\tbaseline goroutines\tpeak goroutines\tend goroutines\t")
	for _, r := range []struct {
		name            string
		base, peak, end goRuntime
	}{{"berth up", baseUp, peakUp, endUp}, {"berth sim", baseSim, peakSim, endSim}} {
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.0f\t%d\t%d\t%d\t\n", r.name, mib(r.base.HeapInuse), mib(r.peak.HeapInuse), mib(r.end.HeapInuse),
			r.base.Goroutines, r.peak.Goroutines, r.end.Goroutines)
	}
	tw.Flush()
	verdict := "ok: nothing lost or stuck, memory and goroutines back to their baseline"
	if !ok {
		verdict = "FAILED: see the figures above"
	}
	fmt.Fprintln(out, verdict)
	if err := printJSON(out, map[string]interface{}{
		"scenario": "churn", "nodes": o.Nodes, "rate": o.Rate, "duration_s": o.Duration.Seconds(), "churned_s": churned.Seconds(),
		"pods": created - createErrs, "never_running": neverRan, "stuck": stuck, "create_errors": createErrs, "delete_errors": deleteErrs,
		"up_heap_base_bytes": baseUp.HeapInuse, "up_heap_peak_bytes": peakUp.HeapInuse, "up_heap_end_bytes": endUp.HeapInuse,
		"up_goroutines_base": baseUp.Goroutines, "up_goroutines_end": endUp.Goroutines,
		"sim_heap_base_bytes": baseSim.HeapInuse, "sim_heap_peak_bytes": peakSim.HeapInuse, "sim_heap_end_bytes": endSim.HeapInuse,
		"sim_goroutines_base": baseSim.Goroutines, "sim_goroutines_end": endSim.Goroutines,
		"ok": ok,
	}); err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("churn failed")
	}
	return nil
}

// watchChurn records each pod's Running and deletion until ctx ends, resuming the watch
// when the API server closes it.
func watchChurn(ctx context.Context, t *target, ns, resourceVersion string, mu *sync.Mutex, pods map[string]*churnPod) error {
	for {
		w, err := t.client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: resourceVersion})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("watching the churned pods: %w", err)
		}
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				w.Stop()
				if ctx.Err() != nil {
					return nil // stopped by the scenario
				}
				return fmt.Errorf("the watch of the churned pods failed: %v", ev.Object)
			}
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			resourceVersion = pod.ResourceVersion
			mu.Lock()
			p := pods[pod.Name]
			if p != nil {
				if pod.Status.Phase == corev1.PodRunning {
					p.running = true
				}
				if ev.Type == watch.Deleted {
					p.gone = true
				}
			}
			mu.Unlock()
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}
