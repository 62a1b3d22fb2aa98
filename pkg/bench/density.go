package bench

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// DensityOptions configure the density scenario.
type DensityOptions struct {
	// Kubeconfig names a cluster (with a scheduler); empty starts `berth up` in a temporary
	// directory. Either way the scenario starts `berth sim` with Nodes nodes against it.
	Kubeconfig string
	Nodes      int
	Pods       int
	// Creators is how many goroutines create pods at once.
	Creators int
	// Hold is how long to keep the pods running afterwards, checking every 10 s that every
	// node is Ready, every node Lease renewed within its duration, and every pod Running.
	Hold time.Duration
}

// RunDensity creates Pods pods on Nodes simulated nodes (berth's real node agent on the
// in-memory runtime) and measures the time until all are Running, pods per second end to
// end (first create to last Running), each pod's create → Running latency, and the peak
// memory of berth up and berth sim.
func RunDensity(ctx context.Context, out io.Writer, o DensityOptions) error {
	t, s, ns, nodesReady, cleanup, err := simCluster(ctx, o.Kubeconfig, o.Nodes, clusterOptions{})
	if err != nil {
		return err
	}
	defer cleanup()

	latency := &latencies{name: "create → Running"}
	cpuBefore := cpuNow(t, s)
	start, last, retried, err := createAndWatch(ctx, t, ns, o.Pods, o.Creators, time.Duration(o.Pods)*50*time.Millisecond+5*time.Minute,
		latency, "Running", func(_ watch.EventType, pod *corev1.Pod) bool { return pod.Status.Phase == corev1.PodRunning })
	if err != nil {
		return err
	}
	elapsed := last.Sub(start)
	used := cpuNow(t, s).since(cpuBefore)
	rate := float64(o.Pods) / elapsed.Seconds()
	var held holdResult
	if o.Hold > 0 {
		if held, err = hold(ctx, t, ns, o.Nodes, o.Pods, o.Hold); err != nil {
			return err
		}
	}
	upPeak, simPeak := t.peakRSSBytes(), s.peakRSSBytes()

	fmt.Fprintf(out, "density: %d pods on %d simulated nodes (berth's node agent on the in-memory runtime)\n", o.Pods, o.Nodes)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "nodes Ready after\t%.1f s\t\n", nodesReady.Seconds())
	fmt.Fprintf(tw, "all pods Running after\t%.1f s\t\n", elapsed.Seconds())
	fmt.Fprintf(tw, "end to end\t%.0f pods/s\t\n", rate)
	fmt.Fprintf(tw, "creates retried (server timeouts)\t%d\t\n", retried)
	if upPeak > 0 {
		fmt.Fprintf(tw, "berth up peak RSS\t%.0f MiB\t\n", mib(upPeak))
	}
	fmt.Fprintf(tw, "berth sim peak RSS\t%.0f MiB\t\n", mib(simPeak))
	if t.child != nil {
		fmt.Fprintf(tw, "CPU per pod: berth up\t%.2f ms\t\n", ms(used.up)/float64(o.Pods))
	}
	fmt.Fprintf(tw, "CPU per pod: berth sim\t%.2f ms\t\n", ms(used.sim)/float64(o.Pods))
	fmt.Fprintf(tw, "CPU per pod: this benchmark\t%.2f ms\t\n", ms(used.self)/float64(o.Pods))
	if o.Hold > 0 {
		fmt.Fprintf(tw, "held for\t%s\t\n", o.Hold)
		fmt.Fprintf(tw, "fewest nodes Ready in a check\t%d of %d\t\n", held.minReady, o.Nodes)
		fmt.Fprintf(tw, "oldest Lease renewal seen\t%.1f s\t\n", held.maxLeaseAge.Seconds())
		fmt.Fprintf(tw, "fewest pods Running in a check\t%d of %d\t\n", held.minRunning, o.Pods)
		fmt.Fprintf(tw, "API requests while held\t%.0f /s\t\n", held.requestsPerSecond)
		fmt.Fprintf(tw, "  GETs of ConfigMaps and Secrets\t%.0f /s\t\n", held.objectGetsPerSecond)
		fmt.Fprintf(tw, "watches open at the end\t%.0f\t\n", held.watches)
	}
	tw.Flush()
	printTable(out, []*latencies{latency})
	result := map[string]interface{}{
		"scenario": "density", "nodes": o.Nodes, "pods": o.Pods,
		"nodes_ready_s": nodesReady.Seconds(), "all_running_s": elapsed.Seconds(), "pods_per_second": rate,
		"latency_p50_ms": ms(latency.quantile(0.5)), "latency_p99_ms": ms(latency.quantile(0.99)),
		"sim_peak_rss_bytes": simPeak, "sim_cpu_s": used.sim.Seconds(), "bench_cpu_s": used.self.Seconds(),
		"create_retries": retried,
	}
	if o.Hold > 0 {
		result["hold_s"] = o.Hold.Seconds()
		result["hold_min_nodes_ready"] = held.minReady
		result["hold_max_lease_age_s"] = held.maxLeaseAge.Seconds()
		result["hold_min_pods_running"] = held.minRunning
		result["hold_api_requests_per_s"] = held.requestsPerSecond
		result["hold_object_gets_per_s"] = held.objectGetsPerSecond
		result["hold_watches"] = held.watches
	}
	if upPeak > 0 {
		result["up_peak_rss_bytes"] = upPeak
		result["up_cpu_s"] = used.up.Seconds()
	}
	return printJSON(out, result)
}

// holdResult is the worst a hold saw.
type holdResult struct {
	minReady, minRunning int
	maxLeaseAge          time.Duration
	// requestsPerSecond and objectGetsPerSecond are the API server's rates over the hold
	// (all requests; GETs of single ConfigMaps and Secrets), watches those open at its end.
	requestsPerSecond, objectGetsPerSecond, watches float64
}

// hold checks every 10 s for d that the simulated nodes are Ready with fresh Leases and the
// pods in ns Running.
func hold(ctx context.Context, t *target, ns string, nodes, pods int, d time.Duration) (holdResult, error) {
	r := holdResult{minReady: nodes, minRunning: pods}
	before, err := t.apiRequests(ctx)
	if err != nil {
		return r, err
	}
	start := time.Now()
	end := start.Add(d)
	for time.Now().Before(end) {
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(10 * time.Second):
		}
		ready, err := readySimNodes(ctx, t)
		if err != nil {
			return r, err
		}
		r.minReady = min(r.minReady, ready)
		leases, err := t.client.CoordinationV1().Leases("kube-node-lease").List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return r, err
		}
		now := time.Now()
		for _, l := range leases.Items {
			if l.Spec.RenewTime != nil {
				r.maxLeaseAge = max(r.maxLeaseAge, now.Sub(l.Spec.RenewTime.Time))
			}
		}
		// Only the pods that are not Running come back: listing 150,000 pods every 10 s
		// would be most of the API server's work. Nothing deletes the benchmark's pods.
		notRunning, err := t.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{ResourceVersion: "0", FieldSelector: "status.phase!=" + string(corev1.PodRunning)})
		if err != nil {
			return r, err
		}
		r.minRunning = min(r.minRunning, pods-len(notRunning.Items))
	}
	after, err := t.apiRequests(ctx)
	if err != nil {
		return r, err
	}
	took := time.Since(start).Seconds()
	r.requestsPerSecond = (after.Total - before.Total) / took
	r.objectGetsPerSecond = (after.ObjectGets - before.ObjectGets) / took
	r.watches = after.Watches
	return r, nil
}
