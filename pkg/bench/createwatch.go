package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"
)

// createAndWatch creates n bench pods in ns from creators goroutines and follows them with a
// watch until each has reached the state reached reports, recording each pod's latency from
// its create request to the watch event that shows it there. It returns when the first pod
// was created and when the last one got there, and how many creates were retried; what
// names the state in errors.
func createAndWatch(ctx context.Context, t *target, ns string, n, creators int, timeout time.Duration,
	latency *latencies, what string, reached func(watch.EventType, *corev1.Pod) bool) (start, last time.Time, retried int, err error) {
	list, err := t.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return start, last, 0, err
	}
	resourceVersion := list.ResourceVersion
	w, err := t.client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: resourceVersion})
	if err != nil {
		return start, last, 0, err
	}
	defer func() { w.Stop() }()

	var mu sync.Mutex
	var retries atomic.Int64
	created := make(map[string]time.Time, n)
	start = time.Now()
	createErr := make(chan error, 1)
	go func() {
		createErr <- parallel(ctx, n, creators, func(i int) error {
			name := fmt.Sprintf("pod-%06d", i)
			mu.Lock()
			created[name] = time.Now()
			mu.Unlock()
			return createRetrying(ctx, t, ns, benchPod(name), &retries)
		})
	}()
	done := 0
	deadline := time.After(timeout)
	for done < n {
		select {
		case err := <-createErr:
			if err != nil {
				return start, last, 0, fmt.Errorf("creating pods: %w", err)
			}
			createErr = nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				// The API server closes a watch that falls behind; resume where it stopped,
				// as an informer would.
				if w, err = t.client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: resourceVersion}); err != nil {
					return start, last, 0, fmt.Errorf("resuming the watch after %d %s pods: %w", done, what, err)
				}
				continue
			}
			if ev.Type == watch.Error {
				return start, last, 0, fmt.Errorf("the watch failed after %d %s pods: %v", done, what, ev.Object)
			}
			pod, isPod := ev.Object.(*corev1.Pod)
			if !isPod {
				continue
			}
			resourceVersion = pod.ResourceVersion
			if !reached(ev.Type, pod) {
				continue
			}
			mu.Lock()
			c, seen := created[pod.Name]
			delete(created, pod.Name)
			mu.Unlock()
			if !seen {
				continue // a later update of a pod already counted
			}
			last = time.Now()
			latency.add(last.Sub(c))
			done++
		case <-deadline:
			return start, last, 0, fmt.Errorf("only %d of %d pods %s in time", done, n, what)
		case <-ctx.Done():
			return start, last, 0, ctx.Err()
		}
	}
	return start, last, int(retries.Load()), nil
}

// createRetrying creates pod, retrying with client-go's backoff (five attempts at most, a
// second apart and doubling) while the API server answers that it is overloaded or that etcd timed out,
// as a controller would on its next sync; retries counts those answers. A retry that finds the
// pod already there means the timed-out attempt landed.
func createRetrying(ctx context.Context, t *target, ns string, pod *corev1.Pod, retries *atomic.Int64) error {
	attempts := 0
	return retry.OnError(wait.Backoff{Duration: time.Second, Factor: 2, Steps: 5}, transient, func() error {
		attempts++
		_, err := t.client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		switch {
		case attempts > 1 && apierrors.IsAlreadyExists(err):
			return nil
		case err != nil && transient(err):
			retries.Add(1)
		}
		return err
	})
}

// transient reports an error that a later attempt may not get: the API server out of time or
// capacity, or etcd's "request timed out".
func transient(err error) bool {
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err)
}
