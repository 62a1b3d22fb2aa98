package node

import (
	"github.com/berth-cluster/berth/pkg/node/container"
	"github.com/berth-cluster/berth/pkg/node/kuberuntime"
	"github.com/berth-cluster/berth/pkg/node/prober"
	"github.com/berth-cluster/berth/pkg/node/prober/results"
)

// probeVerdicts shows the runtime the liveness and startup verdicts of the probe manager
// (built before the runtime: its exec probes go straight through the CRI).
type probeVerdicts struct {
	m *prober.Manager
}

var _ kuberuntime.ProbeResults = probeVerdicts{}

func (v probeVerdicts) Liveness(id container.ContainerID) (kuberuntime.ProbeResult, bool) {
	return convert(v.m.Liveness(id))
}

func (v probeVerdicts) Startup(id container.ContainerID) (kuberuntime.ProbeResult, bool) {
	return convert(v.m.Startup(id))
}

func convert(r results.Result, found bool) (kuberuntime.ProbeResult, bool) {
	switch r {
	case results.Success:
		return kuberuntime.ProbeSuccess, found
	case results.Failure:
		return kuberuntime.ProbeFailure, found
	default:
		return kuberuntime.ProbeUnknown, found
	}
}
