package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/berth-cluster/berth/pkg/cri/memory"
	"github.com/berth-cluster/berth/pkg/sim"
)

func newSimCommand() *cobra.Command {
	var kubeconfigPath, templatePath, dataDir, prefix, metricsAddress string
	var nodes, podsPerNode int
	var pullDelay time.Duration
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Run many simulated nodes: berth's real node agent on an in-memory runtime",
		Long: `sim runs N node agents in this process, named sim-0001, sim-0002, ... Each is berth's
real node agent (config source, syncLoop, pod workers, status manager, node status and Lease)
on an in-memory CRI runtime, so the pods bound to these nodes go through the kubelet's logic
and report real statuses and events, without containers. A pod's annotations script its
containers (see pkg/cri/memory):

  sim.berth.dev/run-seconds[.<container>]: "30"     exit after 30 s (default: run until stopped)
  sim.berth.dev/exit-code[.<container>]: "1"        exit code of that exit (default 0)
  sim.berth.dev/fail-start[.<container>]: "msg"     StartContainer fails with msg
  sim.berth.dev/oom[.<container>]: "true"           end OOMKilled
  sim.berth.dev/exec-exit-code: "1"                 exit code of exec probes

Image names containing "fail-pull" fail to pull.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			restConfig, err := clientcmd.BuildConfigFromFlags("", kubeconfigPath)
			if err != nil {
				return err
			}
			patientHTTP2()
			opts := sim.Options{Nodes: nodes, NamePrefix: prefix, PodsPerNode: podsPerNode, DataDir: dataDir,
				Runtime: memory.Options{PullDelay: pullDelay}}
			if templatePath != "" {
				if opts.Template, err = readNodeTemplate(templatePath); err != nil {
					return err
				}
			}
			if opts.DataDir == "" {
				if opts.DataDir, err = os.MkdirTemp("", "berth-sim-"); err != nil {
					return err
				}
				defer os.RemoveAll(opts.DataDir)
			}
			ctx, cancel := signalContext()
			defer cancel()
			if metricsAddress != "" {
				if err := serveProcessMetrics(ctx, metricsAddress); err != nil {
					return err
				}
			}
			return sim.Run(ctx, restConfig, opts, nil)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&kubeconfigPath, "kubeconfig", "", "kubeconfig of the cluster")
	fs.IntVar(&nodes, "nodes", 1, "how many nodes to simulate")
	fs.StringVar(&templatePath, "node-template", "", "a Node (YAML or JSON) whose labels, taints and capacity every simulated node takes (default: 32 cpu, 256Gi memory, 1Ti ephemeral storage)")
	fs.IntVar(&podsPerNode, "pods-per-node", 110, "pods capacity of each node, unless the template sets one")
	fs.StringVar(&prefix, "name-prefix", "sim-", "prefix of the nodes' names")
	fs.StringVar(&dataDir, "data-dir", "", "directory of the node agents' state (default: a temporary directory, removed at exit)")
	fs.DurationVar(&pullDelay, "pull-delay", 0, "how long each simulated image pull takes")
	fs.StringVar(&metricsAddress, "metrics-address", "", "address to serve this process's Go runtime metrics (/metrics: goroutines, heap) and profiles (/debug/pprof/) on, for benchmarks")
	_ = cmd.MarkFlagRequired("kubeconfig")
	return cmd
}

// serveProcessMetrics serves the Go runtime's and the process's metrics on address until
// ctx ends.
func serveProcessMetrics(ctx context.Context, address string) error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	l, err := net.Listen("tcp", address)
	if err != nil {
		return fmt.Errorf("--metrics-address: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l)
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	return nil
}

// readNodeTemplate reads a Node from a YAML or JSON file; an error names the file and why.
func readNodeTemplate(path string) (*v1.Node, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--node-template: %w", err)
	}
	obj, gvk, err := scheme.Codecs.UniversalDeserializer().Decode(data, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("--node-template %s: %w", path, err)
	}
	n, ok := obj.(*v1.Node)
	if !ok {
		return nil, fmt.Errorf("--node-template %s: kind %s, want a Node", path, gvk.Kind)
	}
	return n, nil
}

// patientHTTP2 gives this process's API connections a minute, not client-go's 30 s + 15 s,
// before an unanswered HTTP/2 health-check ping drops them, unless the environment says
// otherwise (client-go reads these variables). The simulation is a load generator beside its
// API server on few cores: when both are CPU-bound a ping waits long for its answer, and a
// connection dropped for that is redialled, with a TLS handshake, under the same starvation.
func patientHTTP2() {
	for name, seconds := range map[string]string{"HTTP2_READ_IDLE_TIMEOUT_SECONDS": "60", "HTTP2_PING_TIMEOUT_SECONDS": "60"} {
		if _, set := os.LookupEnv(name); !set {
			os.Setenv(name, seconds)
		}
	}
}
