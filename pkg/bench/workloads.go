package bench

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/sim"
)

// WorkloadsOptions configure the workloads scenario.
type WorkloadsOptions struct {
	// Kubeconfig names a cluster with a scheduler and the controllers; empty starts `berth
	// up --disable-controller-manager` in a temporary directory with `berth controllers`
	// beside it, so that the controllers' CPU is measured apart. Either way the scenario
	// starts `berth sim` with Nodes nodes against it.
	Kubeconfig string
	Nodes      int
	// Replicas is what the Deployment is scaled to from 0.
	Replicas int32
	// Timeout bounds each of the two steps.
	Timeout time.Duration
}

// RunWorkloads measures the workload controllers at scale on simulated nodes: the time until
// a DaemonSet has an available pod on each of Nodes nodes, and until a Deployment scaled from
// 0 to Replicas has them all available, with the CPU berth up (API server, scheduler and
// controllers) and berth sim spent on each.
func RunWorkloads(ctx context.Context, out io.Writer, o WorkloadsOptions) error {
	t, s, ns, nodesReady, cleanup, err := simCluster(ctx, o.Kubeconfig, o.Nodes, clusterOptions{separateControllers: true})
	if err != nil {
		return err
	}
	defer cleanup()
	labels := map[string]string{"app": "bench-workload"}
	template := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{
			// Only the simulated nodes: a cluster given by kubeconfig may have others.
			NodeSelector: map[string]string{sim.SimulatedLabel: "true"},
			Containers:   benchPod("").Spec.Containers,
		},
	}
	apps := t.client.AppsV1()

	// Step 1: a DaemonSet on every node.
	cpuBefore := cpuNow(t, s)
	start := time.Now()
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "bench-daemon"},
		Spec:       appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template},
	}
	if _, err := apps.DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the DaemonSet: %w", err)
	}
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, o.Timeout, true, func(ctx context.Context) (bool, error) {
		got, err := apps.DaemonSets(ns).Get(ctx, ds.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		st := got.Status
		return st.DesiredNumberScheduled == int32(o.Nodes) && st.NumberAvailable == int32(o.Nodes) && st.UpdatedNumberScheduled == int32(o.Nodes), nil
	})
	if err != nil {
		return fmt.Errorf("the DaemonSet did not have an available pod on each of %d nodes within %s: %w", o.Nodes, o.Timeout, err)
	}
	daemonElapsed := time.Since(start)
	daemonCPU := cpuNow(t, s).since(cpuBefore)
	// The DaemonSet goes, with its pods, before the Deployment comes: each step its own.
	if err := apps.DaemonSets(ns).Delete(ctx, ds.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}); err != nil {
		return fmt.Errorf("deleting the DaemonSet: %w", err)
	}
	if err := waitNoPods(ctx, t, ns, o.Timeout); err != nil {
		return err
	}

	// Step 2: a Deployment scaled from 0.
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "bench-deployment"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](0),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: template,
		},
	}
	if _, err := apps.Deployments(ns).Create(ctx, deploy, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the Deployment: %w", err)
	}
	cpuBefore = cpuNow(t, s)
	start = time.Now()
	// A patch of the scale, as kubectl scale sends: no resourceVersion to go stale while the
	// deployment controller writes the status of the Deployment it just saw created.
	patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, o.Replicas)
	if _, err := apps.Deployments(ns).Patch(ctx, deploy.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "scale"); err != nil {
		return fmt.Errorf("scaling the Deployment: %w", err)
	}
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, o.Timeout, true, func(ctx context.Context) (bool, error) {
		got, err := apps.Deployments(ns).Get(ctx, deploy.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		st := got.Status
		return st.ObservedGeneration >= got.Generation && st.AvailableReplicas == o.Replicas && st.UpdatedReplicas == o.Replicas, nil
	})
	if err != nil {
		return fmt.Errorf("the Deployment did not have %d available replicas within %s: %w", o.Replicas, o.Timeout, err)
	}
	deployElapsed := time.Since(start)
	deployCPU := cpuNow(t, s).since(cpuBefore)
	upPeak, simPeak := t.peakRSSBytes(), s.peakRSSBytes()

	fmt.Fprintf(out, "workloads: a DaemonSet on %d simulated nodes, a Deployment scaled 0 → %d\n", o.Nodes, o.Replicas)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "nodes Ready after\t%.1f s\t\n", nodesReady.Seconds())
	fmt.Fprintf(tw, "DaemonSet: a pod available on every node after\t%.1f s\t\n", daemonElapsed.Seconds())
	fmt.Fprintf(tw, "Deployment: all replicas available after\t%.1f s\t\n", deployElapsed.Seconds())
	if t.child != nil {
		fmt.Fprintf(tw, "CPU of berth up (API server, etcd, scheduler): DaemonSet, Deployment\t%.1f s, %.1f s\t\n", daemonCPU.up.Seconds(), deployCPU.up.Seconds())
		fmt.Fprintf(tw, "berth up peak RSS\t%.0f MiB\t\n", mib(upPeak))
	}
	if t.controllers != nil {
		fmt.Fprintf(tw, "CPU of berth controllers: DaemonSet, Deployment\t%.1f s, %.1f s\t\n", daemonCPU.controllers.Seconds(), deployCPU.controllers.Seconds())
		fmt.Fprintf(tw, "berth controllers peak RSS\t%.0f MiB\t\n", mib(processRSS(t.controllers.Process.Pid, "VmHWM")))
	}
	fmt.Fprintf(tw, "CPU of berth sim: DaemonSet, Deployment\t%.1f s, %.1f s\t\n", daemonCPU.sim.Seconds(), deployCPU.sim.Seconds())
	fmt.Fprintf(tw, "berth sim peak RSS\t%.0f MiB\t\n", mib(simPeak))
	tw.Flush()
	result := map[string]interface{}{
		"scenario": "workloads", "nodes": o.Nodes, "replicas": o.Replicas,
		"nodes_ready_s": nodesReady.Seconds(), "daemonset_s": daemonElapsed.Seconds(), "deployment_s": deployElapsed.Seconds(),
		"daemonset_sim_cpu_s": daemonCPU.sim.Seconds(), "deployment_sim_cpu_s": deployCPU.sim.Seconds(),
		"sim_peak_rss_bytes": simPeak,
	}
	if t.child != nil {
		result["daemonset_up_cpu_s"] = daemonCPU.up.Seconds()
		result["deployment_up_cpu_s"] = deployCPU.up.Seconds()
		result["up_peak_rss_bytes"] = upPeak
	}
	if t.controllers != nil {
		result["daemonset_controllers_cpu_s"] = daemonCPU.controllers.Seconds()
		result["deployment_controllers_cpu_s"] = deployCPU.controllers.Seconds()
		result["controllers_peak_rss_bytes"] = processRSS(t.controllers.Process.Pid, "VmHWM")
	}
	return printJSON(out, result)
}

// waitNoPods waits until ns has no pods left.
func waitNoPods(ctx context.Context, t *target, ns string, timeout time.Duration) error {
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		pods, err := t.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{ResourceVersion: "0", Limit: 1})
		return err == nil && len(pods.Items) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("the pods of %s were not all gone within %s: %w", ns, timeout, err)
	}
	return nil
}
