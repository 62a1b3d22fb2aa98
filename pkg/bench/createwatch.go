package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// createAndWatch creates n bench pods in ns from creators goroutines and follows them with a
// watch until each has reached the state reached reports, recording each pod's latency from
// its create request to the watch event that shows it there. It returns when the first pod
// was created and when the last one got there; what names the state in errors.
func createAndWatch(ctx context.Context, t *target, ns string, n, creators int, timeout time.Duration,
	latency *latencies, what string, reached func(watch.EventType, *corev1.Pod) bool) (start, last time.Time, err error) {
	list, err := t.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return start, last, err
	}
	resourceVersion := list.ResourceVersion
	w, err := t.client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: resourceVersion})
	if err != nil {
		return start, last, err
	}
	defer func() { w.Stop() }()

	var mu sync.Mutex
	created := make(map[string]time.Time, n)
	start = time.Now()
	createErr := make(chan error, 1)
	go func() {
		createErr <- parallel(ctx, n, creators, func(i int) error {
			name := fmt.Sprintf("pod-%06d", i)
			mu.Lock()
			created[name] = time.Now()
			mu.Unlock()
			_, err := t.client.CoreV1().Pods(ns).Create(ctx, benchPod(name), metav1.CreateOptions{})
			return err
		})
	}()
	done := 0
	deadline := time.After(timeout)
	for done < n {
		select {
		case err := <-createErr:
			if err != nil {
				return start, last, fmt.Errorf("creating pods: %w", err)
			}
			createErr = nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				// The API server closes a watch that falls behind; resume where it stopped,
				// as an informer would.
				if w, err = t.client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: resourceVersion}); err != nil {
					return start, last, fmt.Errorf("resuming the watch after %d %s pods: %w", done, what, err)
				}
				continue
			}
			if ev.Type == watch.Error {
				return start, last, fmt.Errorf("the watch failed after %d %s pods: %v", done, what, ev.Object)
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
			return start, last, fmt.Errorf("only %d of %d pods %s in time", done, n, what)
		case <-ctx.Done():
			return start, last, ctx.Err()
		}
	}
	return start, last, nil
}
