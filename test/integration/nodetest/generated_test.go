package nodetest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/yaml"

	podregistry "github.com/berth-cluster/berth/pkg/apiserver/registry/core/pod"
	"github.com/berth-cluster/berth/pkg/util/panics"
	"github.com/berth-cluster/berth/test/integration/framework"
	"github.com/berth-cluster/berth/test/integration/nodetest/podgen"
)

// The generated-pods run: BERTH_PODGEN_SEED picks the pods (default 1), BERTH_PODGEN_PODS
// how many run (default 10000).
const (
	genNodes      = 5
	genBatch      = 500
	genInFlight   = 3
	convergeBound = 3 * time.Minute
	deleteBound   = 3 * time.Minute
)

func envInt(t *testing.T, name string, def int64) int64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}

// recoveredPanics sums berth_recovered_panics_total over every component.
func recoveredPanics() float64 {
	ch := make(chan prometheus.Metric, 100)
	go func() { panics.Recovered.Collect(ch); close(ch) }()
	total := 0.0
	for m := range ch {
		var d dto.Metric
		if m.Write(&d) == nil && d.Counter != nil {
			total += d.Counter.GetValue()
		}
	}
	return total
}

func TestGeneratedPodsThroughTheNodeAgent(t *testing.T) {
	seed := envInt(t, "BERTH_PODGEN_SEED", 1)
	total := int(envInt(t, "BERTH_PODGEN_PODS", 10000))
	t.Logf("seed %d (BERTH_PODGEN_SEED), %d pods (BERTH_PODGEN_PODS)", seed, total)
	c := framework.StartShared(t)
	ctx := context.Background()
	const ns = "generated"
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	WaitForServiceAccount(t, c.Client, ns)
	// The objects "present" exist, "absent" does not (a pod that needs it waits).
	if _, err := c.Client.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "present"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := c.Client.CoreV1().Secrets(ns).Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "present"}, Data: map[string][]byte{"k": []byte("v")}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	var nodes []*Node
	for k := range genNodes {
		n := StartNode(t, c, fmt.Sprintf("gen-node-%d", k), NodeOptions{MaxPods: (genInFlight + 1) * genBatch / genNodes, NoEvents: true, PodCIDR: fmt.Sprintf("127.%d.0.0/16", 10+k)})
		nodes = append(nodes, n)
	}
	for _, n := range nodes {
		n.WaitForNodeReady(t, time.Minute)
	}
	// The pods are followed through one watch rather than polled with lists.
	factory := informers.NewSharedInformerFactoryWithOptions(c.Client, 0, informers.WithNamespace(ns))
	podInformer := factory.Core().V1().Pods().Informer()
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	cache.WaitForCacheSync(stop, podInformer.HasSynced)
	store := podInformer.GetStore()
	// Fewer collections: the API server, etcd and five node agents share this process.
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	panicsBefore := recoveredPanics()
	g := podgen.New(seed, podgen.Options{Script: true, FailPulls: true, HostPathDir: t.TempDir()})

	start := time.Now()
	var generated, rejectedByValidation int
	var rejectedByAPI, run atomic.Int64
	index, queued := 0, 0
	// Batches overlap (genInFlight at once), so that creating, settling and deleting pods
	// of different batches share the API server's time.
	var outcomesMu sync.Mutex
	outcomes := map[string]int{}
	tally := func(o string) { outcomesMu.Lock(); outcomes[o]++; outcomesMu.Unlock() }
	inFlight := make(chan struct{}, genInFlight)
	var wg sync.WaitGroup
	for batch := 0; queued < total && !t.Failed(); batch++ {
		// Generate until the batch is full of pods the API's validation accepts.
		var pods []*v1.Pod
		var indexes []int
		for len(pods) < min(genBatch, total-queued) {
			i := index
			index++
			generated++
			pod := g.Pod(i, ns, nodes[i%genNodes].Name)
			pod.Labels["batch"] = strconv.Itoa(batch)
			check := pod.DeepCopy()
			podregistry.SetDefaults(check)
			if errs := podregistry.ValidatePod(check); len(errs) > 0 {
				rejectedByValidation++
				continue
			}
			pods, indexes = append(pods, pod), append(indexes, i)
		}
		queued += len(pods)
		inFlight <- struct{}{}
		wg.Go(func() {
			defer func() { <-inFlight }()
			t0 := time.Now()
			created, refused := createAll(t, c, pods, indexes, g)
			rejectedByAPI.Add(int64(refused))
			run.Add(int64(len(created)))
			t1 := time.Now()
			if !waitConverged(t, store, created, batch, seed, tally) {
				return
			}
			t2 := time.Now()
			if !deleteBatch(t, c, store, ns, batch, created, nodes) {
				return
			}
			t.Logf("batch %d: %d pods created in %v, settled in %v, deleted in %v", batch, len(created), t1.Sub(t0).Round(time.Millisecond), t2.Sub(t1).Round(time.Millisecond), time.Since(t2).Round(time.Millisecond))
		})
		// A refused pod leaves its batch short; the next batches make up for it.
		if queued >= total {
			wg.Wait()
			queued = int(run.Load())
		}
	}
	wg.Wait()
	if got := recoveredPanics(); got != panicsBefore {
		t.Errorf("berth_recovered_panics_total grew from %v to %v while the pods ran", panicsBefore, got)
	}
	t.Logf("outcomes: %v", outcomes)
	t.Logf("pods generated %d, accepted %d (refused by validation %d, by the API %d), run %d, seed %d, panics %v, in %v",
		generated, int64(generated-rejectedByValidation)-rejectedByAPI.Load(), rejectedByValidation, rejectedByAPI.Load(), run.Load(), seed, recoveredPanics()-panicsBefore, time.Since(start).Round(time.Second))
	if run.Load() < int64(total) {
		t.Errorf("ran %d pods, want %d", run.Load(), total)
	}
}

// ephemeralNotServed logs once that the API server has no ephemeralcontainers subresource.
var ephemeralNotServed sync.Once

// createdPod is a pod the API accepted, with its index in the seed.
type createdPod struct {
	index int
	pod   *v1.Pod
}

// createAll creates the pods, 16 at a time, and adds ephemeral containers to those the
// generator gives some; a pod the API refuses (4xx) is discarded.
func createAll(t *testing.T, c *framework.Cluster, pods []*v1.Pod, indexes []int, g *podgen.Generator) ([]createdPod, int) {
	t.Helper()
	var mu sync.Mutex
	var out []createdPod
	var refused atomic.Int32
	work := make(chan int)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for k := range work {
				pod, err := c.Client.CoreV1().Pods(pods[k].Namespace).Create(context.Background(), pods[k], metav1.CreateOptions{})
				if err != nil {
					if status, ok := err.(apierrors.APIStatus); ok && status.Status().Code >= 400 && status.Status().Code < 500 {
						refused.Add(1)
						continue
					}
					t.Errorf("creating generated pod %d: %v", indexes[k], err)
					continue
				}
				if ecs := g.EphemeralContainers(indexes[k], pod); len(ecs) > 0 {
					withEC := pod.DeepCopy()
					withEC.Spec.EphemeralContainers = ecs
					if updated, err := c.Client.CoreV1().Pods(pod.Namespace).UpdateEphemeralContainers(context.Background(), pod.Name, withEC, metav1.UpdateOptions{}); err == nil {
						pod = updated
					} else if apierrors.IsNotFound(err) {
						ephemeralNotServed.Do(func() { t.Logf("the API server does not serve pods/ephemeralcontainers: %v", err) })
					} else if !apierrors.IsInvalid(err) && !apierrors.IsConflict(err) {
						t.Errorf("adding ephemeral containers to generated pod %d: %v", indexes[k], err)
					}
				}
				mu.Lock()
				out = append(out, createdPod{index: indexes[k], pod: pod})
				mu.Unlock()
			}
		})
	}
	for k := range pods {
		work <- k
	}
	close(work)
	wg.Wait()
	return out, int(refused.Load())
}

// waitConverged waits until every pod of the batch has a settled status in the API (the
// node agent's status writes were accepted), and fails with the pods that do not.
func waitConverged(t *testing.T, store cache.Store, pods []createdPod, batch int, seed int64, outcomes func(string)) bool {
	deadline := time.Now().Add(convergeBound)
	for {
		byUID := map[string]*v1.Pod{}
		for _, p := range pods {
			if obj, ok, _ := store.GetByKey(p.pod.Namespace + "/" + p.pod.Name); ok {
				byUID[string(obj.(*v1.Pod).UID)] = obj.(*v1.Pod)
			}
		}
		var pending []createdPod
		for _, p := range pods {
			if got, ok := byUID[string(p.pod.UID)]; !ok || !podgen.Settled(got, time.Now()) {
				if ok {
					p.pod = got
				}
				pending = append(pending, p)
			}
		}
		if len(pending) == 0 {
			for _, p := range byUID {
				outcomes(podgen.Outcome(p, time.Now()))
			}
			return true
		}
		if time.Now().After(deadline) {
			for k, p := range pending {
				if k == 5 {
					break
				}
				out, _ := yaml.Marshal(p.pod)
				t.Errorf("generated pod %d of seed %d: status did not settle within %v:\n%s", p.index, seed, convergeBound, out)
			}
			t.Errorf("batch %d: %d of %d pods did not settle within %v", batch, len(pending), len(pods), convergeBound)
			return false
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// deleteBatch deletes the batch's pods and waits until the API has none of them and no
// node's runtime runs any of them.
func deleteBatch(t *testing.T, c *framework.Cluster, store cache.Store, ns string, batch int, pods []createdPod, nodes []*Node) bool {
	ctx := context.Background()
	// One DELETE per pod, 16 at a time, as kubectl deletes a list of pods.
	work := make(chan createdPod)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for p := range work {
				err := c.Client.CoreV1().Pods(ns).Delete(ctx, p.pod.Name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(p.pod.UID))})
				if err != nil && !apierrors.IsNotFound(err) {
					t.Errorf("deleting generated pod %d: %v", p.index, err)
				}
			}
		})
	}
	for _, p := range pods {
		work <- p
	}
	close(work)
	wg.Wait()
	deadline := time.Now().Add(deleteBound)
	for {
		var left []*v1.Pod
		for _, p := range pods {
			if obj, ok, _ := store.GetByKey(p.pod.Namespace + "/" + p.pod.Name); ok && obj.(*v1.Pod).UID == p.pod.UID {
				left = append(left, obj.(*v1.Pod))
			}
		}
		// Nothing of a deleted pod runs, and its directory (with its tmpfs volumes) is gone.
		live, dirs := 0, 0
		if len(left) == 0 {
			for _, n := range nodes {
				uids, err := n.LiveUIDs(ctx)
				if err != nil {
					t.Error(err)
					return false
				}
				for _, p := range pods {
					if p.pod.Spec.NodeName != n.Name {
						continue
					}
					if uids[string(p.pod.UID)] {
						live++
					}
					if _, err := os.Stat(filepath.Join(n.DataDir, "pods", string(p.pod.UID))); err == nil {
						dirs++
					}
				}
			}
		}
		if len(left) == 0 && live == 0 && dirs == 0 {
			return true
		}
		if time.Now().After(deadline) {
			for k := range left {
				if k == 3 {
					break
				}
				out, _ := yaml.Marshal(left[k])
				t.Errorf("pod still in the API %v after its deletion:\n%s", deleteBound, out)
			}
			t.Errorf("batch %d: %d pods still in the API, %d sandboxes or containers still live and %d pod directories left %v after the deletion", batch, len(left), live, dirs, deleteBound)
			return false
		}
		time.Sleep(500 * time.Millisecond)
	}
}
