package e2e

import (
	"bufio"
	"context"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	podregistry "github.com/berth-cluster/berth/pkg/apiserver/registry/core/pod"
	"github.com/berth-cluster/berth/test/integration/nodetest/podgen"
)

// The generated pods of test/integration/nodetest, a sample of them on the real node agent
// and containerd: BERTH_PODGEN_SEED picks them (default 1), BERTH_PODGEN_E2E_PODS how many
// (default 200), in batches that fit the node's 110 pods.
const (
	genE2EBatch    = 70
	genE2ESettle   = 150 * time.Second
	genE2EDeletion = 120 * time.Second
)

func TestNodeRunsGeneratedPods(t *testing.T) {
	c, n := nodeCluster(t)
	seed, total := int64(1), 200
	if v := os.Getenv("BERTH_PODGEN_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseInt(v, 10, 64); err != nil {
			t.Fatalf("BERTH_PODGEN_SEED=%q: %v", v, err)
		}
	}
	if v := os.Getenv("BERTH_PODGEN_E2E_PODS"); v != "" {
		var err error
		if total, err = strconv.Atoi(v); err != nil {
			t.Fatalf("BERTH_PODGEN_E2E_PODS=%q: %v", v, err)
		}
	}
	t.Logf("seed %d (BERTH_PODGEN_SEED), %d pods (BERTH_PODGEN_E2E_PODS)", seed, total)
	config, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	config.QPS, config.Burst = -1, 0
	client := kubernetes.NewForConfigOrDie(config)
	ctx := context.Background()
	ns := c.newNamespace(t)
	if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "present"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Secrets(ns).Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "present"}, Data: map[string][]byte{"k": []byte("v")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	image := busyboxImage(t)
	g := podgen.New(seed, podgen.Options{
		// A few pulls of an image the registry does not have (ErrImagePull, ImagePullBackOff).
		Images:      []string{image, image, image, image, image, image, image, registryHost(t) + "/missing:e2e"},
		HostPathDir: t.TempDir(),
		// Short commands that exit, fail, or sleep past the batch.
		Command: func(r *rand.Rand) []string {
			return [][]string{{"sh", "-c", "exit 0"}, {"sh", "-c", "exit 1"}, {"sleep", "600"}, {"sleep", "600"}, {"sh", "-c", "sleep 1"}, {"true"}}[r.Intn(6)]
		},
		InitCommand: func(r *rand.Rand) []string {
			return [][]string{{"true"}, {"true"}, {"sh", "-c", "exit 0"}, {"sh", "-c", "exit 1"}}[r.Intn(4)]
		},
	})
	panicsBefore := recoveredPanicsOf(t, client)

	var generated, invalid, refused, run int
	outcomes := map[string]int{}
	index := 0
	for batch := 0; run < total; batch++ {
		var pods []*v1.Pod
		var indexes []int
		for len(pods) < min(genE2EBatch, total-run) {
			i := index
			index++
			generated++
			pod := g.Pod(i, ns, n.name)
			shrinkResources(pod)
			check := pod.DeepCopy()
			podregistry.SetDefaults(check)
			if len(podregistry.ValidatePod(check)) > 0 {
				invalid++
				continue
			}
			pods, indexes = append(pods, pod), append(indexes, i)
		}
		created := map[int]*v1.Pod{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for k, pod := range pods {
			wg.Go(func() {
				got, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					created[indexes[k]] = got
				case isClientError(err):
					refused++
				default:
					t.Errorf("creating generated pod %d: %v", indexes[k], err)
				}
			})
		}
		wg.Wait()
		run += len(created)
		start := time.Now()
		settleGenerated(t, client, ns, created, seed, outcomes)
		settled := time.Since(start)
		deleteGenerated(t, client, n, ns, created)
		t.Logf("batch %d: %d pods settled in %v, deleted in %v", batch, len(created), settled.Round(time.Millisecond), (time.Since(start) - settled).Round(time.Millisecond))
		if t.Failed() {
			return
		}
	}
	if c.proc.exited() {
		t.Fatalf("berth up exited while the generated pods ran: %v", c.proc.err)
	}
	panicsAfter := recoveredPanicsOf(t, client)
	panics := panicsAfter[""] - panicsBefore[""]
	if panics != 0 {
		// The shared cluster: another test running beside may have caused it; the components
		// say where to look in berth up's log.
		t.Errorf("berth_recovered_panics_total grew by %v while the generated pods ran: %v", panics, grownPanics(panicsBefore, panicsAfter))
	}
	t.Logf("outcomes: %v", outcomes)
	t.Logf("pods generated %d, accepted %d (refused by validation %d, by the API %d), run %d, seed %d, panics %v", generated, generated-invalid-refused, invalid, refused, run, seed, panics)
}

// shrinkResources scales a generated pod's cpu and memory down to what a small test machine
// holds (order kept, so requests stay within limits).
func shrinkResources(pod *v1.Pod) {
	shrink := func(l v1.ResourceList) {
		if q, ok := l[v1.ResourceCPU]; ok {
			l[v1.ResourceCPU] = *resource.NewMilliQuantity(max(1, q.MilliValue()/100), resource.DecimalSI)
		}
		if q, ok := l[v1.ResourceMemory]; ok {
			l[v1.ResourceMemory] = *resource.NewQuantity(16<<20+q.Value()/16, resource.BinarySI)
		}
	}
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for k := range cs {
			shrink(cs[k].Resources.Requests)
			shrink(cs[k].Resources.Limits)
		}
	}
}

func isClientError(err error) bool {
	status, ok := err.(apierrors.APIStatus)
	return ok && status.Status().Code >= 400 && status.Status().Code < 500
}

// settleGenerated waits until every pod's status, as the API has it, is settled.
func settleGenerated(t *testing.T, client kubernetes.Interface, ns string, pods map[int]*v1.Pod, seed int64, outcomes map[string]int) {
	t.Helper()
	deadline := time.Now().Add(genE2ESettle)
	for {
		list, err := client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		byUID := map[string]*v1.Pod{}
		for k := range list.Items {
			byUID[string(list.Items[k].UID)] = &list.Items[k]
		}
		var pending []int
		for i, p := range pods {
			if got := byUID[string(p.UID)]; got == nil || !podgen.Settled(got, time.Now()) {
				if got != nil {
					pods[i] = got
				}
				pending = append(pending, i)
			}
		}
		if len(pending) == 0 {
			for _, p := range pods {
				outcomes[podgen.Outcome(byUID[string(p.UID)], time.Now())]++
			}
			return
		}
		if time.Now().After(deadline) {
			for k, i := range pending {
				if k == 5 {
					break
				}
				out, _ := yaml.Marshal(pods[i])
				t.Errorf("generated pod %d of seed %d did not settle within %v:\n%s", i, seed, genE2ESettle, out)
			}
			t.Fatalf("%d of %d generated pods did not settle within %v", len(pending), len(pods), genE2ESettle)
		}
		time.Sleep(time.Second)
	}
}

// deleteGenerated deletes the pods and waits until the API has none and containerd runs
// none of their containers.
func deleteGenerated(t *testing.T, client kubernetes.Interface, n *node, ns string, pods map[int]*v1.Pod) {
	t.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	for i, p := range pods {
		wg.Go(func() {
			err := client.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(p.UID))})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting generated pod %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	rs := n.runtime(t)
	deadline := time.Now().Add(genE2EDeletion)
	for {
		list, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		running := runningContainers(t, rs, ns)
		if len(list.Items) == 0 && len(running) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v after their deletion %d generated pods are still in the API and %d of their containers still run", genE2EDeletion, len(list.Items), len(running))
		}
		time.Sleep(time.Second)
	}
}

// recoveredPanicsOf is berth_recovered_panics_total from the API server's /metrics (berth
// up serves every component's there), by its labels ("" sums them all).
func recoveredPanicsOf(t *testing.T, client kubernetes.Interface) map[string]float64 {
	t.Helper()
	out, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("reading the API server's /metrics: %v", err)
	}
	counts := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "berth_recovered_panics_total") {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			counts[strings.TrimPrefix(f[0], "berth_recovered_panics_total")] += v
			counts[""] += v
		}
	}
	return counts
}

// grownPanics are the series of after that grew since before, and by how much.
func grownPanics(before, after map[string]float64) map[string]float64 {
	grown := map[string]float64{}
	for k, v := range after {
		if k != "" && v > before[k] {
			grown[k] = v - before[k]
		}
	}
	return grown
}
