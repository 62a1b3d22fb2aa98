package framework

import (
	"fmt"

	"github.com/berth-cluster/berth/pkg/util/panics"
)

// PanicComponent labels the scheduler's recovered panics in berth_recovered_panics_total.
const PanicComponent = "scheduler"

// PluginPanicError is a panic a plugin raised during one call, recovered where the plugin was
// called (the framework runtime, the queue): the call ends in an Error status naming the
// plugin, the pod backs off and is tried again, and the process, which `berth up` shares with
// the API server and etcd, lives on.
type PluginPanicError struct {
	Plugin string
	Err    *panics.Error
}

func (e *PluginPanicError) Error() string {
	return fmt.Sprintf("panic in plugin %s: %v", e.Plugin, e.Err.Value)
}

func (e *PluginPanicError) Unwrap() error { return e.Err }
