package scheduler

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	componentbaseconfigv1alpha1 "k8s.io/component-base/config/v1alpha1"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/cluster"
	"github.com/berth-cluster/berth/pkg/scheduler"
	"github.com/berth-cluster/berth/pkg/scheduler/config"
	schedframework "github.com/berth-cluster/berth/pkg/scheduler/framework"
	st "github.com/berth-cluster/berth/pkg/scheduler/testing"
	"github.com/berth-cluster/berth/pkg/util/panics"
	"github.com/berth-cluster/berth/test/integration/framework"
)

// panicFilter panics in Filter for the pod named victim during its first panicAttempts
// scheduling attempts (counted in PreFilter), and lets every other pod and attempt through.
type panicFilter struct {
	victim        string
	panicAttempts int

	mu       sync.Mutex
	attempts int
}

const panicFilterName = "PanicFilter"

func (p *panicFilter) Name() string { return panicFilterName }

func (p *panicFilter) PreFilter(_ context.Context, _ *schedframework.CycleState, pod *v1.Pod, _ []*schedframework.NodeInfo) (*schedframework.PreFilterResult, *schedframework.Status) {
	if pod.Name == p.victim {
		p.mu.Lock()
		p.attempts++
		p.mu.Unlock()
	}
	return nil, nil
}

func (p *panicFilter) PreFilterExtensions() schedframework.PreFilterExtensions { return nil }

func (p *panicFilter) Filter(_ context.Context, _ *schedframework.CycleState, pod *v1.Pod, _ *schedframework.NodeInfo) *schedframework.Status {
	if pod.Name != p.victim {
		return nil
	}
	p.mu.Lock()
	attempt := p.attempts
	p.mu.Unlock()
	if attempt <= p.panicAttempts {
		var m map[string]int
		m["boom"]++ // a plugin bug: assignment to entry in nil map
	}
	return nil
}

func (p *panicFilter) attemptsSeen() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.attempts
}

// TestAPanickingPluginFailsOnlyItsPodsAttempt: a Filter plugin that panics for one pod, in
// a scheduler running against the real API server, costs that pod its attempts (a
// FailedScheduling event and PodScheduled=False/SchedulerError naming the plugin, retries
// with back-off) and nothing else: the scheduler lives, other pods are bound meanwhile, the
// pod is bound once the plugin stops panicking, and berth_recovered_panics_total counts the
// panics on the scheduler's /metrics.
func TestAPanickingPluginFailsOnlyItsPodsAttempt(t *testing.T) {
	address := "127.0.0.1:18261"
	plugin := &panicFilter{victim: "victim", panicAttempts: 2}
	c := framework.Start(t, framework.Options{Components: []cluster.Component{{Name: "scheduler", Run: func(ctx context.Context, admin *rest.Config) error {
		cfg, err := config.Complete(&configv1.KubeSchedulerConfiguration{
			LeaderElection: componentbaseconfigv1alpha1.LeaderElectionConfiguration{LeaderElect: ptr.To(false)},
			Profiles: []configv1.KubeSchedulerProfile{{
				SchedulerName: ptr.To(v1.DefaultSchedulerName),
				Plugins:       &configv1.Plugins{MultiPoint: configv1.PluginSet{Enabled: []configv1.Plugin{{Name: panicFilterName}}}},
			}},
		})
		if err != nil {
			return err
		}
		return scheduler.Run(ctx, admin, cfg, scheduler.ServerOptions{
			Address: address,
			OutOfTreeRegistry: schedframework.Registry{panicFilterName: func(context.Context, runtime.Object, schedframework.Handle) (schedframework.Plugin, error) {
				return plugin, nil
			}},
		})
	}}}})
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	createNodes(t, ctx, c.Client, node("n1", "4").Obj(), node("n2", "4").Obj())
	before := testutil.ToFloat64(panics.Recovered.WithLabelValues(schedframework.PanicComponent))

	createPod(t, ctx, c.Client, ns, st.MakePod().Name("victim").Obj())
	// The attempt fails as an internal error, in kube-scheduler's reason, naming the plugin.
	const wantMsg = "panic in plugin PanicFilter: assignment to entry in nil map"
	var cond v1.PodCondition
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := c.Client.CoreV1().Pods(ns).Get(ctx, "victim", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cd := range p.Status.Conditions {
			if cd.Type == v1.PodScheduled && cd.Status == v1.ConditionFalse {
				cond = cd
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("the victim never got PodScheduled=False: %v", err)
	}
	if cond.Reason != v1.PodReasonSchedulerError || !strings.Contains(cond.Message, wantMsg) {
		t.Errorf("PodScheduled=False %s %q, want reason %s and a message with %q", cond.Reason, cond.Message, v1.PodReasonSchedulerError, wantMsg)
	}

	// Meanwhile (the victim backs off) other pods are scheduled.
	for _, name := range []string{"a", "b", "c"} {
		createPod(t, ctx, c.Client, ns, st.MakePod().Name(name).Obj())
	}
	for _, name := range []string{"a", "b", "c"} {
		waitForNode(t, ctx, c.Client, ns, name, 10*time.Second)
	}

	// Retried with back-off (1 s, then 2 s), the victim is bound once the plugin stops.
	waitForNode(t, ctx, c.Client, ns, "victim", 30*time.Second)
	if got := plugin.attemptsSeen(); got != plugin.panicAttempts+1 {
		t.Errorf("the victim was attempted %d times, want %d (%d that panicked, then the one that bound it)", got, plugin.panicAttempts+1, plugin.panicAttempts)
	}

	var event *v1.Event
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		events, err := c.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=victim,reason=FailedScheduling"})
		if err != nil || len(events.Items) == 0 {
			return false, err
		}
		event = &events.Items[0]
		return true, nil
	})
	if err != nil {
		t.Fatalf("no FailedScheduling event for the victim: %v", err)
	}
	if event.Type != v1.EventTypeWarning || !strings.Contains(event.Message, wantMsg) {
		t.Errorf("FailedScheduling event %s %q, want a Warning with %q", event.Type, event.Message, wantMsg)
	}

	// Two attempts panicked, each on at least one node (Filter runs on both in parallel).
	if got := testutil.ToFloat64(panics.Recovered.WithLabelValues(schedframework.PanicComponent)); got < before+2 {
		t.Errorf("berth_recovered_panics_total{component=scheduler} = %v, want at least %v", got, before+2)
	}
	resp, err := http.Get("http://" + address + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), `berth_recovered_panics_total{component="scheduler"}`) {
		t.Errorf("the scheduler's /metrics lacks berth_recovered_panics_total{component=\"scheduler\"}")
	}
}
