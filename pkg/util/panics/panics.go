// Package panics contains a panic at the boundary of the goroutine that handles one pod, one
// object or one request, so that one bad input never ends the process: `berth up` runs etcd,
// the API server, the controllers, the scheduler and a node agent in one process
// (DESIGN.md, "One process, many failure domains").
//
// A recovered panic is logged with its stack, counted in berth_recovered_panics_total{component}
// and handed back as an error, so that the caller records an event and a status reason and
// retries with its usual back-off.
package panics

import (
	"context"
	"fmt"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
)

// Recovered counts the panics recovered, by component ("podworker", "prober", "scheduler",
// "controller/namespace", ...). The API server's /metrics serves it (the legacy registry);
// the node API's and the scheduler's registries add it too.
var Recovered = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "berth_recovered_panics_total",
	Help: "Panics recovered at the boundary of the goroutine that handles one pod, object or request, by component.",
}, []string{"component"})

func init() { legacyregistry.RawMustRegister(Recovered) }

// Error is a recovered panic: what was thrown, and where.
type Error struct {
	Component string
	Value     any
	Stack     []byte
}

func (e *Error) Error() string {
	return fmt.Sprintf("internal error in %s: recovered from panic: %v", e.Component, e.Value)
}

// Recover is deferred at a goroutine boundary: it stops a panic, logs it with its stack,
// counts it, and hands it to onPanic (when not nil).
//
//	defer panics.Recover(ctx, "prober", func(err error) { ... })
func Recover(ctx context.Context, component string, onPanic func(err error)) {
	r := recover()
	if r == nil {
		return
	}
	err := Record(ctx, component, r)
	if onPanic != nil {
		onPanic(err)
	}
}

// Call runs f and returns its error, or the panic it raised as an *Error.
func Call(ctx context.Context, component string, f func() error) (err error) {
	defer Recover(ctx, component, func(e error) { err = e })
	return f()
}

// Forever runs f again and again until ctx ends: when it returns or panics, after a back-off
// of one second doubling to a minute (reset by a run that lasted a minute). It is for the
// long-running loops of one component (PLEG's relist, the volume resync, the eviction
// manager), which must come back after a fault rather than stop silently.
func Forever(ctx context.Context, component string, f func(ctx context.Context)) {
	backoff := time.Second
	for ctx.Err() == nil {
		start := time.Now()
		_ = Call(ctx, component, func() error { f(ctx); return nil })
		if ctx.Err() != nil {
			return
		}
		if time.Since(start) > time.Minute {
			backoff = time.Second
		}
		klog.FromContext(ctx).Info("Restarting a stopped loop", "component", component, "after", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Minute)
	}
}

// Record logs and counts a panic value that the caller recovered itself (a deferred function
// that must decide first whether to recover, as an HTTP handler's does for
// http.ErrAbortHandler). Call it from that deferred function, so that the stack is the
// panic's.
func Record(ctx context.Context, component string, r any) *Error {
	e := &Error{Component: component, Value: r, Stack: debug.Stack()}
	Recovered.WithLabelValues(component).Inc()
	klog.FromContext(ctx).Error(nil, "Recovered from a panic", "component", component, "panic", fmt.Sprint(r), "stack", string(e.Stack))
	return e
}

// ContainLibraryPanics makes the goroutine boundaries of the Kubernetes libraries themselves
// (utilruntime.HandleCrash in client-go's informers and work queues, in wait.Until loops, in
// the API server's own loops) recover and go on instead of ending the process, counting each
// under the component "library". upstream's components crash there, one process each; berth
// up runs them all in one, so it calls this once, first.
//
// http.ErrAbortHandler is not counted: it is the sentinel with which an HTTP handler ends a
// response it cannot finish (a reverse proxy or a watch whose client went away), and the API
// server's panic filter passes it through HandleCrash. utilruntime's own handler does not log
// it either, so counting it gave a count with no stack to explain it.
func ContainLibraryPanics() {
	utilruntime.ReallyCrash = false
	utilruntime.PanicHandlers = append(utilruntime.PanicHandlers, func(_ context.Context, r any) {
		if r == http.ErrAbortHandler {
			return
		}
		Recovered.WithLabelValues("library").Inc()
	})
}
