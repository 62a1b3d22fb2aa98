package queue

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	"github.com/berth-cluster/berth/pkg/util/panics"
)

// The queue calls two kinds of plugin code, PreEnqueue and QueueingHint, from the informers'
// event handlers and its flushing goroutines; a panic in either must not take those down.

// callPreEnqueue runs one PreEnqueue plugin; a panic is an Error status naming it (the pod
// stays gated by it, as for any PreEnqueue error).
func callPreEnqueue(ctx context.Context, pl framework.PreEnqueuePlugin, pod *v1.Pod) (status *framework.Status) {
	defer panics.Recover(ctx, framework.PanicComponent, func(err error) { status = pluginPanicStatus(pl.Name(), err) })
	return pl.PreEnqueue(ctx, pod)
}

// callQueueingHint runs one QueueingHint; a panic is an error, on which the pod is queued, as
// on any hint's error (kube-scheduler's choice: better a useless retry than a pod stuck).
func callQueueingHint(logger klog.Logger, fn QueueingHintFunction, pod *v1.Pod, oldObj, newObj interface{}) (hint framework.QueueingHint, err error) {
	ctx := klog.NewContext(context.Background(), logger)
	defer panics.Recover(ctx, framework.PanicComponent, func(e error) {
		hint, err = framework.Queue, pluginPanicStatus(fn.PluginName, e).AsError()
	})
	return fn.QueueingHintFn(logger, pod, oldObj, newObj)
}

func pluginPanicStatus(plugin string, err error) *framework.Status {
	var pe *panics.Error
	if !errors.As(err, &pe) {
		return framework.AsStatus(err).WithPlugin(plugin)
	}
	return framework.AsStatus(&framework.PluginPanicError{Plugin: plugin, Err: pe}).WithPlugin(plugin)
}
